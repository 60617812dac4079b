import type { OperationFn } from '../common/types';
import { blockChange } from './change';

/** Extend or Shorten Block: a new remaining time for one expiring block (the `extendBlock` Update). */
export const execute: OperationFn = async (env) => [{ json: await blockChange(env, 'extend') }];

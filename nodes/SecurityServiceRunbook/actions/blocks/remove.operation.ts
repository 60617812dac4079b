import type { OperationFn } from '../common/types';
import { blockChange } from './change';

/** Remove Block Now: the `removeBlock` Update. */
export const execute: OperationFn = async (env) => [{ json: await blockChange(env, 'remove') }];

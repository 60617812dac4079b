import { authorization } from './authorization';
import { customer } from './customer';
import { applicationProtection } from './applicationProtection';
import { dashboard } from './dashboard';
import { detection } from './detection';
import { overview } from './overview';
import type { CatalogEntry } from './types';

export * from './types';

const all = [...authorization, ...customer, ...applicationProtection, ...dashboard, ...detection, ...overview];

/** The id of every operation, as a union of literal types (`'dashboard.isUnderAttack' | …`). */
export type OperationId = (typeof all)[number]['id'];

/** Every operation of the spec, in spec order. */
export const catalog: readonly CatalogEntry[] = Object.freeze(all);

const byId = new Map(catalog.map((op) => [op.id, op]));
if (byId.size !== catalog.length) throw new Error('catalog: duplicate operation id');

export function getOperation(id: string): CatalogEntry {
	const op = byId.get(id);
	if (!op) throw new Error(`Unknown operation '${id}'. Known: ${[...byId.keys()].join(', ')}`);
	return op;
}

export function hasOperation(id: string): boolean {
	return byId.has(id);
}

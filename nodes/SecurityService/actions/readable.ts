import type { IDataObject } from 'n8n-workflow';
import { SEVERITY } from '../../../api/catalog/labels';

/** Fields holding epoch seconds in results (ISO 8601 UTC forms are added next to them). */
const EPOCH_FIELDS = new Set(['start_time', 'end_time', 'time', 'create_time', 'update_time', 'timestamp']);

/**
 * Adds readable forms next to wire values, never replacing them: `<time>_iso` (UTC) next to epoch seconds,
 * `severity_name` next to `severity`, `underAttack` next to the attack status.
 */
export function withReadableForms(opId: string, item: IDataObject): IDataObject {
	const out: IDataObject = { ...item };
	for (const [k, v] of Object.entries(item)) {
		if (EPOCH_FIELDS.has(k) && typeof v === 'number' && v >= 1_000_000_000 && v < 10_000_000_000) {
			out[`${k}_iso`] = new Date(v * 1000).toISOString();
		}
	}
	if (typeof item.severity === 'number' && SEVERITY[item.severity] !== undefined)
		out.severity_name = SEVERITY[item.severity];
	if (opId === 'dashboard.isUnderAttack' && typeof item.status === 'number') out.underAttack = item.status === 1;
	return out;
}

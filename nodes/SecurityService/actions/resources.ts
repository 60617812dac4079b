import type { INodeProperties } from 'n8n-workflow';
import { catalog } from '../../../api/catalog/index';
import { RESOURCES, operationWords, resourceLabel as catalogResourceLabel } from '../../../api/catalog/labels';
import type { CatalogEntry } from '../../../api/catalog/types';
import { operationProperties } from './fields';

/** n8n resource value of an operation: its id without the action (`applicationProtection.ipBlacklist`). */
export function resourceOf(op: CatalogEntry): string {
	return op.id.slice(0, op.id.length - op.action.length - 1);
}

export function resourceLabel(resource: string): string {
	return catalogResourceLabel(resource);
}

/** Resources in the catalog's display order (labels.ts), each with its operations. */
export function resources(): Array<{ resource: string; ops: CatalogEntry[] }> {
	const map = new Map<string, CatalogEntry[]>();
	for (const op of catalog) {
		const r = resourceOf(op);
		if (!map.has(r)) map.set(r, []);
		map.get(r)?.push(op);
	}
	const order = RESOURCES.map((r) => r.value);
	const rank = (r: string) => (order.includes(r) ? order.indexOf(r) : order.length);
	return [...map.entries()].sort((a, b) => rank(a[0]) - rank(b[0])).map(([resource, ops]) => ({ resource, ops }));
}

/** The first read of a resource: what the node opens on (a read, never a write). */
function defaultOperation(ops: CatalogEntry[]): string {
	const preferred = ops.find((op) => op.id === 'dashboard.isUnderAttack');
	return (preferred ?? ops.find((op) => op.safety === 'read') ?? ops[0]).action;
}

/** `={{ {...}[resource + "." + operation] }}`: the canvas subtitle names the action in words. */
function subtitleExpression(): string {
	const map: Record<string, string> = {};
	for (const op of catalog) map[op.id] = operationWords(op.id).action;
	return `={{ ${JSON.stringify(map)}[$parameter["resource"] + "." + $parameter["operation"]] || "" }}`;
}

export const SUBTITLE = subtitleExpression();

/** resource selector, one operation selector per resource, then every operation's parameters. */
export function buildProperties(): INodeProperties[] {
	const all = resources();
	const props: INodeProperties[] = [
		{
			displayName: 'Resource',
			name: 'resource',
			type: 'options',
			noDataExpression: true,
			options: all.map(({ resource }) => ({ name: resourceLabel(resource), value: resource })),
			default: 'dashboard',
		},
	];
	for (const { resource, ops } of all) {
		props.push({
			displayName: 'Operation',
			name: 'operation',
			type: 'options',
			noDataExpression: true,
			displayOptions: { show: { resource: [resource] } },
			options: ops
				.map((op) => {
					const w = operationWords(op.id);
					return { name: w.name, value: op.action, description: w.description, action: w.action };
				})
				.sort((a, b) => a.name.localeCompare(b.name)),
			default: defaultOperation(ops),
		});
	}
	for (const { resource, ops } of all) for (const op of ops) props.push(...operationProperties(op, resource));
	return props;
}

import type { INodeProperties } from 'n8n-workflow';
import { catalog } from '../../../api/catalog/index';
import type { CatalogEntry } from '../../../api/catalog/types';
import { humanize, operationProperties } from './fields';

/** Display names of resources (UI text only; the operations themselves come from the catalog). */
const RESOURCE_LABELS: Record<string, string> = {
	authorization: 'Authorization',
	customer: 'Customer',
	'applicationProtection.authBase': 'Application Protection: Authentication Base',
	'applicationProtection.authBypass': 'Application Protection: Authentication Bypass',
	'applicationProtection.authHttp': 'Application Protection: HTTP Authentication',
	'applicationProtection.authIp': 'Application Protection: IP Authentication',
	'applicationProtection.headerCompliance': 'Application Protection: Request-Header Compliance',
	'applicationProtection.httpFilter': 'Application Protection: HTTP Filter',
	'applicationProtection.ipBlacklist': 'Application Protection: IP Blacklist',
	'applicationProtection.ipWhitelist': 'Application Protection: IP Whitelist',
	'applicationProtection.xForwardedFor': 'Application Protection: X-Forwarded-For',
	'applicationProtection.statusCodes': 'Application Protection: Status Codes',
	'applicationProtection.switch': 'Application Protection: Switch',
	'applicationProtection.uaBlacklist': 'Application Protection: UA Blacklist',
	'applicationProtection.urlBypass': 'Application Protection: URL Bypass',
	dashboard: 'Dashboard',
	detection: 'Detection',
	overview: 'Overview',
};

/** n8n resource value of an operation: its id without the action (`applicationProtection.ipBlacklist`). */
export function resourceOf(op: CatalogEntry): string {
	return op.id.slice(0, op.id.length - op.action.length - 1);
}

export function resourceLabel(resource: string): string {
	return RESOURCE_LABELS[resource] ?? resource.split('.').map(humanize).join(': ');
}

/** Resources in catalog order, each with its operations. */
export function resources(): Array<{ resource: string; ops: CatalogEntry[] }> {
	const map = new Map<string, CatalogEntry[]>();
	for (const op of catalog) {
		const r = resourceOf(op);
		if (!map.has(r)) map.set(r, []);
		map.get(r)?.push(op);
	}
	return [...map.entries()].map(([resource, ops]) => ({ resource, ops }));
}

function operationName(op: CatalogEntry): string {
	return humanize(op.action);
}

/** resource selector, one operation selector per resource, then every operation's parameters. */
export function buildProperties(): INodeProperties[] {
	const all = resources();
	const props: INodeProperties[] = [
		{
			displayName: 'Resource',
			name: 'resource',
			type: 'options',
			noDataExpression: true,
			options: all
				.map(({ resource }) => ({ name: resourceLabel(resource), value: resource }))
				.sort((a, b) => a.name.localeCompare(b.name)),
			default: 'applicationProtection.switch',
		},
	];
	for (const { resource, ops } of all) {
		const firstAction: string = ops[0].action;
		props.push({
			displayName: 'Operation',
			name: 'operation',
			type: 'options',
			noDataExpression: true,
			displayOptions: { show: { resource: [resource] } },
			options: ops
				.map((op) => ({
					name: operationName(op),
					value: op.action,
					description: op.summary,
					action: op.summary.length > 80 ? `${op.summary.slice(0, 77)}...` : op.summary,
				}))
				.sort((a, b) => a.name.localeCompare(b.name)),
			default: firstAction,
		});
	}
	for (const { resource, ops } of all) for (const op of ops) props.push(...operationProperties(op, resource));
	return props;
}

// What the editor shows, read from the node's own description (the same objects n8n loads): no silent numbers, every
// entry a user selects is offered from the service's lists, and the words follow n8n's style, not the wire's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { NodeHelpers, type INodeProperties } from 'n8n-workflow';
import { TemporalApi } from '../../credentials/TemporalApi.credentials.ts';
import { catalog } from '../../api/catalog/index.ts';
import { ValidationError } from '../../api/errors.ts';
import { collectParams } from '../../nodes/SecurityService/actions/fieldValues.ts';
import { offlineClient } from '../helpers/offlineClient.mts';
import { SecurityService } from '../../nodes/SecurityService/SecurityService.node.ts';
import { SecurityServiceTrigger } from '../../nodes/SecurityServiceTrigger/SecurityServiceTrigger.node.ts';
import { operationTitle, operationWords } from '../../api/catalog/labels.ts';
import { parseDuration } from '../../api/duration.ts';
import { addressProblem, tlsProblem } from '../../nodes/SecurityServiceRunbook/transport/tls.ts';
import { SecurityServiceRunbook } from '../../nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.ts';

const node = new SecurityService();
const props = node.description.properties;

/** Every property with the operations it is shown for (collections and fixed collections walked). */
function walk(
	list: readonly INodeProperties[],
	visit: (p: INodeProperties, ops: string[]) => void,
	ops: string[] = [],
): void {
	for (const p of list) {
		const shown = (p.displayOptions?.show?.operation as string[] | undefined) ?? ops;
		visit(p, shown);
		for (const o of (p.options ?? []) as unknown[]) {
			const child = o as INodeProperties & { values?: INodeProperties[] };
			if (Array.isArray(child.values)) walk(child.values, visit, shown);
			else if (child.type !== undefined) walk([child], visit, shown);
		}
	}
}

test('no number is preselected where the catalog has none: required integers start empty, never 0', () => {
	const zeros: string[] = [];
	let empty = 0;
	walk(props, (p) => {
		if (p.type !== 'number') return;
		if (p.default === 0) zeros.push(p.name);
		if (p.required && p.default === null) empty++;
	});
	assert.deepEqual(zeros, [], 'number fields defaulting to 0');
	// blackhole_time, duration, error_code(create), error_code_rewrite, max_http_request, threshold_tps, trust_duration …
	assert.ok(empty >= 6, `required integers without a default start empty (found ${empty})`);
});

test('a required number left as the editor shows it (empty) is refused naming the field, and nothing is sent', async () => {
	const { client, sent } = offlineClient('secret-desc');
	const op = catalog.find((c) => c.id === 'applicationProtection.statusCodes.create');
	assert.ok(op);
	// The node's own defaults for this operation, as n8n fills them, with only the site and domain typed in.
	const defaults = new Map<string, unknown>();
	for (const p of props)
		if (((p.displayOptions?.show?.operation as string[] | undefined) ?? []).includes(op.action))
			defaults.set(p.name, p.default);
	const typed: Record<string, unknown> = { site_id: '20001', domain_port_id: '30001', error_code: 404 };
	const params = collectParams(op, (name) => (name in typed ? typed[name] : defaults.get(name)));
	await assert.rejects(
		client.call(op.id, params),
		(e: unknown) => e instanceof ValidationError && /error_code_rewrite/.test(e.message) && /required/i.test(e.message),
	);
	assert.equal(sent(), 0);
});

test('entries a user selects come from the service: resource locators and option lists name methods the node has', () => {
	const search = new Set(Object.keys(node.methods?.listSearch ?? {}));
	const load = new Set(Object.keys(node.methods?.loadOptions ?? {}));
	const used: string[] = [];
	walk(props, (p) => {
		for (const m of p.modes ?? []) {
			const method = m.typeOptions?.searchListMethod;
			if (method) {
				assert.ok(search.has(method), `${p.name}: listSearch.${method} exists`);
				used.push(`${p.name}:${method}`);
			}
		}
		const lo = p.typeOptions?.loadOptionsMethod;
		if (lo) {
			assert.ok(load.has(lo), `${p.name}: loadOptions.${lo} exists`);
			used.push(`${p.name}:${lo}`);
		}
	});
	for (const want of [
		'customer_id:searchCustomers',
		'p_flag_id:searchHttpFilterPolicies',
		'name:searchSwitchNames',
		'name:searchDetectionItems',
		'existing_error_code:searchStatusCodes',
		'url_id:searchBypassRecords',
		'value:blacklistEntries',
		'value:whitelistEntries',
	])
		assert.ok(used.includes(want), `${want} is offered (used: ${[...new Set(used)].join(', ')})`);
	for (const m of [...search, ...load])
		assert.ok(
			used.some((u) => u.endsWith(`:${m}`)),
			`method ${m} is used by a field`,
		);
});

test('the fields that select an existing entry (update / delete) are picked from a list', () => {
	const selectors: Record<string, string> = {
		// Create's error_code is a typed number: the picked one has its own parameter name (no clash on switching).
		'applicationProtection.statusCodes.update': 'existing_error_code',
		'applicationProtection.statusCodes.delete': 'existing_error_code',
		'applicationProtection.authBypass.delete': 'url_id',
		'applicationProtection.httpFilter.update': 'p_flag_id',
		'applicationProtection.httpFilter.delete': 'p_flag_id',
	};
	for (const [opId, field] of Object.entries(selectors)) {
		const op = catalog.find((c) => c.id === opId);
		assert.ok(op, opId);
		const p = props.find(
			(x) =>
				x.name === field &&
				((x.displayOptions?.show?.operation as string[] | undefined) ?? []).includes(op.action) &&
				x.type === 'resourceLocator',
		);
		assert.ok(p, `${opId}: ${field} is a resource locator`);
		assert.deepEqual(
			p.modes?.map((m) => m.name),
			['list', 'id'],
			`${opId}: ${field} can be picked or typed`,
		);
	}
});

test('words a user reads: no wire names, no ALL_CAPS options, no developer notes', () => {
	const bad: string[] = [];
	walk(props, (p) => {
		if (/_/.test(p.displayName)) bad.push(`label "${p.displayName}"`);
		if (/declared (string|integer)|sent as|wire/i.test(p.description ?? ''))
			bad.push(`description of ${p.name}: ${p.description}`);
		for (const o of (p.options ?? []) as Array<{ name?: string; action?: string; value?: unknown; values?: unknown }>) {
			if (o.values !== undefined || typeof o.name !== 'string' || 'type' in o) continue;
			if (
				/^[A-Z0-9_]{3,}$/.test(o.name) &&
				!/^(HTTP|HTTPS|URL|IP|TCP|UDP|ICMP|DNS|SSL|TLS|CC|API|SPE|ID|GET|POST|PUT|DELETE|HEAD|OPTIONS|TRACE|CONNECT|PATCH)$/.test(
					o.name,
				)
			)
				bad.push(`option "${o.name}" of ${p.name}`);
			if (o.action && /\(|≤|one page|JSON body/.test(o.action)) bad.push(`action "${o.action}"`);
		}
	});
	assert.deepEqual(bad, []);
});

test("every field an AI agent fills (the node is usableAsTool) has a label and a description, the trigger's too", () => {
	const missing: string[] = [];
	const check = (list: readonly INodeProperties[]) =>
		walk(list, (p, ops) => {
			if (p.type === 'notice' || p.name === 'resource' || p.name === 'operation') return;
			if (!p.displayName?.trim()) missing.push(`${p.name}: no label`);
			if ((p.description ?? '').trim().length < 10)
				missing.push(`${p.name} (${ops.join(',') || 'all'}): no description`);
		});
	check(props);
	check(new SecurityServiceTrigger().description.properties);
	check(new SecurityServiceRunbook().description.properties);
	assert.deepEqual(missing, []);
});

test('one name per action: the operation name and the node-panel action start with the same verb; IP Blacklist › Block', () => {
	const differ: string[] = [];
	for (const op of catalog) {
		const w = operationWords(op.id);
		if (w.name.split(' ')[0].toLowerCase() !== w.action.split(' ')[0].toLowerCase())
			differ.push(`${op.id}: "${w.name}" vs "${w.action}"`);
	}
	assert.deepEqual(differ, []);
	assert.equal(operationTitle('applicationProtection.ipBlacklist.add'), 'IP Blacklist › Block');
	assert.equal(operationWords('applicationProtection.ipBlacklist.add').action, 'Block IP addresses or ranges');
	assert.equal(operationTitle('applicationProtection.ipBlacklist.remove'), 'IP Blacklist › Unblock');
});

test('the unblock rows are labelled by what they hold, not "Value Name or ID"; DDoS events show Limit, not a page size', () => {
	const labels: string[] = [];
	walk(props, (p, ops) => {
		if (p.name === 'value' && (ops.includes('remove') || ops.includes('add'))) labels.push(p.displayName);
		assert.notEqual(p.name === 'num' && p.displayName, 'Page Size', "the page size is the node's own business");
	});
	assert.ok(labels.includes('Blocked Entry') && labels.includes('Allowed Entry'), labels.join(', '));
	assert.ok(!labels.some((l) => /Value Name or ID/.test(l)), labels.join(', '));
	const ddos = props
		.filter((p) => ((p.displayOptions?.show?.operation as string[] | undefined) ?? []).includes('ddosEvents'))
		.map((p) => p.name);
	assert.ok(ddos.includes('limit') && !ddos.includes('num'), ddos.join(', '));
	const additional = props.find(
		(p) =>
			p.name === 'additionalFields' &&
			((p.displayOptions?.show?.operation as string[] | undefined) ?? []).includes('ddosEvents'),
	);
	const names = ((additional?.options ?? []) as INodeProperties[]).map((o) => o.name);
	assert.ok(!names.includes('num'), names.join(', '));
});

test('durations are typed as people say them: seconds, or 90s, 30m, 2h, 1d, 1h30m; anything else is not a duration', () => {
	assert.deepEqual(
		['3600', 600, '90s', '30m', '2h', '1d', '1h30m', '1.5h', ' 2 h '].map(parseDuration),
		[3600, 600, 90, 1800, 7200, 86400, 5400, 5400, 7200],
	);
	for (const bad of ['two hours', '', '2x', '-5m', 'h', null, {}])
		assert.equal(parseDuration(bad), undefined, String(bad));
});

test('the Runbook node: Start first, one "By" everywhere, Task Queue of Add Expiring Block under Options, durations as text', () => {
	const rb = new SecurityServiceRunbook().description.properties;
	const ops = (rb.find((p) => p.name === 'operation')?.options ?? []) as Array<{ name: string; value: string }>;
	assert.equal(ops[0].value, 'start');
	const rest = ops.slice(1).map((o) => o.name);
	assert.deepEqual(
		rest,
		[...rest].sort((a, b) => a.localeCompare(b)),
	);
	const byLabels = new Set(rb.filter((p) => p.name === 'by').map((p) => p.displayName));
	assert.deepEqual([...byLabels], ['By']);
	const shownFor = (p: INodeProperties) => (p.displayOptions?.show?.operation as string[] | undefined) ?? [];
	const addFields = rb.filter((p) => shownFor(p).includes('blockAdd')).map((p) => p.name);
	assert.ok(!addFields.includes('taskQueue') && addFields.at(-1) === 'blockOptions', addFields.join(', '));
	for (const p of rb.filter((x) => x.name === 'durationSeconds')) assert.equal(p.type, 'string');
});

test('Temporal credential: a raw ERR_INVALID_URL or HPE_INVALID_CONSTANT becomes one line naming HTTP API Address and what to enter', () => {
	assert.match(
		String(addressProblem('127.0.0.1:7243')),
		/^HTTP API Address: enter the full address with http:\/\/ or https:\/\//,
	);
	assert.equal(addressProblem('http://127.0.0.1:7243'), undefined);
	assert.match(
		String(tlsProblem({ code: 'ERR_INVALID_URL', message: 'Invalid URL' })),
		/^HTTP API Address: enter the full address/,
	);
	assert.match(
		String(tlsProblem({ message: 'Parse Error: Expected HTTP/', cause: { code: 'HPE_INVALID_CONSTANT' } })),
		/^HTTP API Address: this port does not answer HTTP .*gRPC port \(7233\)/,
	);
});

test('issue 40: the Temporal credential slot shows only for Token Source "cluster", each slot has its own label, both Tests exist', () => {
	for (const n of [node, new SecurityServiceTrigger()]) {
		const d = n.description;
		const slots = d.credentials ?? [];
		const temporal = slots.find((c) => c.name === 'temporalApi');
		assert.deepEqual(temporal?.displayOptions, { show: { tokenSource: ['cluster'] } }, d.name);
		const labels = slots.map((c) => c.displayName ?? 'Credential');
		assert.equal(new Set(labels).size, labels.length, labels.join(' / '));
		assert.ok(!labels.includes('Credential'), labels.join(' / '));
		const source = d.properties.find((p) => p.name === 'tokenSource');
		assert.equal(source?.default, 'credential', `${d.name}: the slot is hidden unless asked for`);
		assert.deepEqual(
			(source?.options as Array<{ value: string }>).map((o) => o.value),
			['credential', 'cluster'],
		);
		for (const c of slots)
			assert.equal(
				typeof (n.methods.credentialTest as Record<string, unknown>)[String(c.testedBy)],
				'function',
				`${d.name}: ${c.name}`,
			);
	}
	const rb = new SecurityServiceRunbook();
	const t = rb.description.credentials?.[0];
	assert.equal(typeof (rb.methods.credentialTest as Record<string, unknown>)[String(t?.testedBy)], 'function');
	// n8n runs a credential's declarative `test` before any node's testedBy: there must be none, or the raw
	// HPE_INVALID_CONSTANT comes back.
	assert.equal((new TemporalApi() as { test?: unknown }).test, undefined);
});

test('issue 40: no two operations of a resource share a parameter name with different forms (no [object Object] on switching)', () => {
	const seen = new Map<string, string>();
	const clashes: string[] = [];
	for (const p of props) {
		const resources = (p.displayOptions?.show?.resource as string[] | undefined) ?? ['*'];
		const form = `${p.type}${p.type === 'fixedCollection' || p.type === 'collection' ? ':object' : ''}`;
		for (const r of resources) {
			const key = `${r}:${p.name}`;
			const before = seen.get(key);
			if (before !== undefined && before !== form) clashes.push(`${key} ${before} vs ${form}`);
			seen.set(key, form);
		}
	}
	assert.deepEqual(clashes, []);
	const kinds = props
		.filter(
			(p) =>
				p.name.startsWith('ip_black_list') &&
				(p.displayOptions?.show?.resource as string[])?.[0] === 'applicationProtection.ipBlacklist',
		)
		.map((p) => `${(p.displayOptions?.show?.operation as string[])[0]}:${p.name}:${p.type}`);
	assert.deepEqual(kinds.sort(), ['add:ip_black_list:string', 'remove:ip_black_list_entries:fixedCollection']);
});

test('issue 40: searches for approving and expiring blocks find the Runbook node; a new Runbook node is named after its action', () => {
	const codex = JSON.parse(
		readFileSync(
			new URL('../../nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.json', import.meta.url),
			'utf8',
		),
	) as { alias: string[] };
	const rb = new SecurityServiceRunbook().description;
	const words = [rb.displayName, ...codex.alias].map((w) => w.toLowerCase());
	for (const q of ['approve', 'approval', 'expiring block', 'temporary block', 'runbook'])
		assert.ok(
			words.some((w) => w.includes(q)),
			`"${q}" matches none of ${words.join(', ')}`,
		);
	// n8n's own naming (the editor calls makeNodeName with the parameters and their defaults).
	const name = (operation: string) =>
		NodeHelpers.makeNodeName(
			NodeHelpers.getNodeParameters(rb.properties, { operation }, true, false, null, rb) ?? {},
			rb,
		);
	assert.equal(name('start'), 'Start an attack-response runbook');
	assert.equal(name('decide'), 'Approve or reject a runbook');
	const ops = rb.properties.find((p) => p.name === 'operation')?.options as Array<{
		name: string;
		action: string;
		value: string;
	}>;
	const add = ops.find((o) => o.value === 'blockAdd');
	assert.equal(add?.action.toLowerCase(), 'add an expiring block', 'the panel says what the list says');
	assert.match(String(rb.subtitle), /"blockAdd":"Add an expiring block"/);
});

test('issue 40: Start shows the plan and the gate first; Workflow ID, Task Queue and ID Token last', () => {
	const rb = new SecurityServiceRunbook().description.properties;
	const start = rb
		.filter((p) => ((p.displayOptions?.show?.operation as string[] | undefined) ?? []).includes('start'))
		.map((p) => p.name);
	// Where the plan comes from (issue 39: the JSON, or the site's last runbook), then the plan or the site.
	assert.deepEqual(start.slice(0, 3), ['planSource', 'rearmSite', 'plan']);
	assert.deepEqual(start.slice(-3), ['workflowId', 'taskQueue', 'idToken']);
});

test("issue 40: the AI tool's description (n8n's manual Tool Description default) names the guard's rules", () => {
	const tool = node.description.usableAsTool;
	const text = typeof tool === 'object' ? String(tool.replacements?.description ?? '') : '';
	for (const rule of [/wider than \/16/, /special range/, /protected range/, /site's own addresses/])
		assert.match(text, rule);
});

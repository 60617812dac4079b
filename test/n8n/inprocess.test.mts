// In-process n8n: every operation of the catalog executed through n8n's own execution code — n8n-core's
// WorkflowExecute running a Manual Trigger → "Security Service" workflow, n8n's CLI CredentialsHelper running the
// credential's preAuthentication/authenticate, n8n's request helpers — against the simulator. No hand-made
// `this` contexts: the node gets the IExecuteFunctions n8n-core builds.
//
// n8n 2.40.7 needs Node 24 and its DI container, so the workflows run in a child process on the cached runtime's
// Node 24 (test/n8n/inprocess-runner.mjs); this file (project Node 20 + tsx) drives it over JSON lines and asserts
// the outputs against what the simulator really answered (recorded by a proxy between n8n and the simulator) and
// against the simulator's request log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { catalog, getOperation, type CatalogEntry } from '../../api/catalog/index.ts';
import { formatYmdhms } from '../../api/catalog/rules.ts';
import { operationTitle } from '../../api/catalog/labels.ts';
import { validateParams } from '../../api/client.ts';
import { startSimulator, type LogEntry } from '../../simulator/index.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { samples } from '../helpers/samples.mts';
import { specOperationCount } from '../helpers/spec.mts';
import {
	chain,
	ensureBuilt,
	ssNode,
	startRecordingProxy,
	startRunner,
	toNodeParameters,
	type ProxyRecord,
	type RunResult,
	type Runner,
} from './inprocess-driver.mts';

const APP = { appId: 'inproc-app', secret: 'inproc-secret-value-42' };
const MASKED = new Set(['access_token', 'secret', 'refresh_token', 'code']);

let sim: Awaited<ReturnType<typeof startSimulator>>;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
let runner: Runner;
let direct: ReturnType<typeof createApiClient>;
let ids: ReturnType<typeof sim.sim.firstIds>;
const executed = new Set<string>();
/** Every execution's data as n8n produced it (checked for secrets at the end). */
const executions: RunResult[] = [];

async function exec(workflow: Parameters<Runner['run']>[0]): Promise<RunResult> {
	const res = await runner.run(workflow);
	executions.push(res);
	return res;
}
const timings: Record<string, number> = {};

before(async () => {
	ensureBuilt();
	sim = await startSimulator({ port: 0, ...APP, seed: 11, clock: 'manual', httpFilterProcessingMs: 0 });
	// Tag each exchange with the simulator's log entry for it (the simulator logs before it answers).
	proxy = await startRecordingProxy(sim.url, (rec) => {
		const last = sim.sim.requests().at(-1);
		return last && last.method === rec.method ? last : undefined;
	});
	runner = await startRunner();
	await runner.setCredential('cred-app', 'Security Service (simulator)', {
		baseUrl: proxy.url,
		appId: APP.appId,
		secret: APP.secret,
		grantType: 'app',
		authFailureCodes: '40101',
		accessToken: '',
		expiresAt: 0,
	});
	direct = createApiClient({ baseUrl: sim.url, credentials: { ...APP, tokenKind: 'app' } });
	ids = sim.sim.firstIds();
	sim.sim.startAttack({
		site_id: ids.site_id,
		duration: 600,
		sources: [{ ip: '198.18.0.1' }, { cidr: '198.18.1.0/28' }],
	});
	sim.sim.advance(120);
});

after(async () => {
	await runner?.close();
	await direct?.close();
	await proxy?.close();
	await sim?.close();
});

/** The sample of an operation with the simulator's ids. */
function sample(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
	const p: Record<string, unknown> = { ...samples[id] };
	const at: Record<string, string> = {
		site_id: ids.site_id,
		domain_port_id: ids.domain_port_id,
		customer_id: ids.customer_id,
	};
	for (const k of Object.keys(at)) if (k in p) p[k] = at[k];
	return { ...p, ...extra };
}

function envelope(rec: ProxyRecord): { code: number; msg?: string; result?: unknown } {
	return JSON.parse(rec.body);
}

function logOf(rec: ProxyRecord): LogEntry {
	const e = rec.tag as LogEntry | undefined;
	assert.ok(e, `no simulator log entry for ${rec.method} ${rec.url}`);
	return e;
}

function atPath(v: unknown, path: string): unknown {
	if (!path) return v;
	let cur = v;
	for (const k of path.split('.'))
		cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined;
	return cur;
}

/**
 * What the node must output for one result: list entries one item each, an object as one item; a write answered with
 * nothing says what it did: `{success, operation, <every value sent as the catalog checked it>, summary}` (`sent`).
 */
function unwrap(op: CatalogEntry, result: unknown, sent?: Record<string, unknown>): unknown[] {
	const parsed = op.result.parse(result);
	const wrap = (e: unknown) => (e !== null && typeof e === 'object' ? e : { value: e });
	if (op.list?.itemsAt !== undefined) {
		const list = atPath(parsed, op.list.itemsAt);
		assert.ok(Array.isArray(list), `${op.id}: result has no list at '${op.list.itemsAt}'`);
		return list.map(wrap);
	}
	if (Array.isArray(parsed)) return parsed.map(wrap);
	if (parsed !== null && typeof parsed === 'object') return [parsed];
	if ((parsed === undefined || parsed === null) && sent)
		return [{ success: true, operation: operationTitle(op.id), ...sent }];
	if (parsed === undefined || parsed === null) return [{ success: true }];
	return [{ value: parsed }];
}

/** The values a write sent, as the catalog checked them (secrets, constants and local-only fields left out). */
function sentValues(op: CatalogEntry, params: Record<string, unknown>): Record<string, unknown> {
	const valid = validateParams(op, params);
	const out: Record<string, unknown> = {};
	for (const f of op.fields)
		if (
			f.kind !== 'secret' &&
			f.constant === undefined &&
			!f.local &&
			valid[f.name] !== undefined &&
			valid[f.name] !== ''
		)
			out[f.name] = valid[f.name];
	return out;
}

/** A write's one-sentence summary, checked (title first, the site named) and taken out for the deep comparison. */
function withoutSummary(opId: string, item: Record<string, any>, params: Record<string, unknown>): Record<string, any> {
	if (typeof item.summary !== 'string') return item;
	assert.ok(item.summary.startsWith(`${operationTitle(opId)}: `), `${opId}: summary ${item.summary}`);
	if (params.site_id !== undefined)
		assert.ok(
			item.summary.includes(`Site ID ${String(params.site_id)}`),
			`${opId}: summary names the site: ${item.summary}`,
		);
	const { summary: _s, ...rest } = item;
	return rest;
}

/**
 * An output item without the readable forms the node adds next to wire values, after checking them: `<k>_iso` is
 * the ISO 8601 UTC form of epoch seconds `<k>`, `severity_name` names `severity`, `underAttack` is `status === 1`.
 */
function wireOnly(opId: string, item: Record<string, any>): Record<string, any> {
	const out = { ...item };
	for (const k of Object.keys(item)) {
		if (!k.endsWith('_iso')) continue;
		const base = k.slice(0, -4);
		assert.equal(typeof item[base], 'number', `${opId}: ${k} without ${base}`);
		assert.equal(item[k], new Date(item[base] * 1000).toISOString(), `${opId}: ${k}`);
		delete out[k];
	}
	if ('severity_name' in item) {
		assert.equal(item.severity_name, (['low', 'medium', 'high'] as const)[item.severity], `${opId}: severity_name`);
		delete out.severity_name;
	}
	if (opId === 'dashboard.isUnderAttack') {
		assert.equal(item.underAttack, item.status === 1, `${opId}: underAttack`);
		delete out.underAttack;
	}
	return out;
}

const norm = (v: unknown): string =>
	Array.isArray(v)
		? v.map(norm).join(',')
		: v !== null && typeof v === 'object'
			? JSON.stringify(Object.entries(v).sort())
			: String(v);

/** The simulator received every parameter the test gave (path, query or body), as the catalog encodes it. */
function assertSent(op: CatalogEntry, params: Record<string, unknown>, entry: LogEntry, skip: string[] = []): void {
	for (const f of op.fields) {
		const v = params[f.name];
		if (v === undefined || MASKED.has(f.name) || skip.includes(f.name) || f.local) continue;
		if (typeof v === 'string' && v.startsWith('=')) continue; // an n8n expression, resolved by n8n
		if (f.in === 'path') {
			assert.ok(
				decodeURIComponent(entry.path).includes(`/${String(v)}`),
				`${op.id}: path ${entry.path} lacks ${f.name}=${String(v)}`,
			);
			continue;
		}
		const got = entry.query?.[f.name] ?? (entry.body as Record<string, unknown> | null)?.[f.name];
		assert.equal(
			norm(got),
			norm(v),
			`${op.id}: ${f.name} sent as ${JSON.stringify(got)}, expected ${JSON.stringify(v)}`,
		);
	}
}

function nodeRun(res: RunResult, name: string) {
	const tasks = res.runData[name];
	assert.ok(
		tasks?.length,
		`node '${name}' did not run; ran: ${Object.keys(res.runData).join(', ')}; error: ${res.error?.message}`,
	);
	return tasks[tasks.length - 1];
}

function assertSuccess(res: RunResult, names: string[]): void {
	const errors = Object.entries(res.runData).flatMap(([n, t]) =>
		t.filter((x) => x.error).map((x) => `${n}: ${x.error?.message} ${x.error?.description ?? ''}`),
	);
	assert.equal(
		res.status,
		'success',
		`workflow ${res.status}: ${res.error?.message ?? ''} ${res.error?.description ?? ''}\n${errors.join('\n')}\nproxy: ${proxy.errors.slice(-3).join('\n')}`,
	);
	assert.deepEqual(errors, []);
	for (const n of names) assert.equal(nodeRun(res, n).executionStatus, 'success', `${n} status`);
}

interface Step {
	name: string;
	id: string;
	params: Record<string, unknown>;
	/** Node parameters to add or replace (e.g. n8n expressions, Return All / Limit). */
	extra?: Record<string, unknown>;
	/** Catalog fields not compared on the wire (windows split by the node). */
	skipSent?: string[];
	/** The service may reject the (expired) token once before the node renews it and retries. */
	renewal?: boolean;
}

/**
 * Runs Manual Trigger → steps… as one n8n workflow and checks each step: it succeeded, every request it made was
 * answered with code 0 and logged by the simulator under its operation with the parameters given, and its output
 * items are exactly the unwrapped results the simulator sent (lists one item per entry, merged across pages and
 * windows), each paired with the input item.
 */
async function runSteps(title: string, steps: Step[]): Promise<Record<string, Array<Record<string, any>>>> {
	const mark = proxy.mark();
	// Each node runs once (n8n's Execute Once), so a list output upstream does not multiply the calls downstream.
	const wfDoc = chain(
		title,
		steps.map((s) => ssNode(s.name, toNodeParameters(getOperation(s.id), s.params, s.extra), { executeOnce: true })),
	);
	const res = await exec(wfDoc);
	timings[title] = res.ms;
	assertSuccess(
		res,
		steps.map((s) => s.name),
	);
	const recs = proxy.since(mark);
	const out: Record<string, Array<Record<string, any>>> = {};
	for (const s of steps) {
		const op = getOperation(s.id);
		const all = recs.filter((r) => r.tag && (r.tag as LogEntry).opId === s.id);
		const rejected = all.filter((r) => r.body.startsWith('{') && envelope(r).code === 40101);
		assert.ok(rejected.length <= (s.renewal ? 1 : 0), `${s.id}: token rejected ${rejected.length}×`);
		const mine = all.filter((r) => !rejected.includes(r));
		assert.ok(mine.length >= 1, `${s.id}: the simulator saw no request from n8n`);
		if (op.encoding === 'redirect') {
			// GET /oauth/connect answers with a redirect to redirect_uri carrying code and state.
			for (const r of mine) assert.ok(r.status >= 300 && r.status < 400, `${s.id}: HTTP ${r.status}`);
		} else for (const r of mine) assert.equal(envelope(r).code, 0, `${s.id}: ${r.body}`);
		assertSent(op, s.params, logOf(mine[0]), s.skipSent);
		const items = nodeRun(res, s.name).items;
		out[s.name] = items;
		if (op.resource === 'authorization') continue; // outputs redacted: checked by the authorization test
		let expected: unknown[] = [];
		if (op.list && (op.list.paging || op.window)) {
			const seen = new Set<string>();
			for (const r of mine)
				for (const e of unwrap(op, envelope(r).result)) {
					const key = (e as { alert_id?: string }).alert_id;
					if (op.window && key !== undefined) {
						if (seen.has(String(key))) continue;
						seen.add(String(key));
					}
					expected.push(e);
				}
		} else {
			assert.equal(mine.length, 1, `${s.id}: one request expected, got ${mine.length}`);
			// Values given as n8n expressions are what n8n resolved (the item names them; the chained tests check them).
			const given = Object.fromEntries(
				Object.entries(s.params).map(([k, v]) => [k, typeof v === 'string' && v.startsWith('=') ? items[0]?.[k] : v]),
			);
			expected = unwrap(op, envelope(mine[0]).result, op.safety === 'read' ? undefined : sentValues(op, given));
			// IP Blacklist › Add reports what it blocked (one merged range per request) instead of the empty result.
			if (s.id === 'applicationProtection.ipBlacklist.add') {
				const sent = String((logOf(mine[0]).body as Record<string, unknown>).ip_black_list);
				const title = operationTitle(op.id);
				const summary = `${title}: blocked ${sent} (Site ID ${s.params.site_id}, Domain-Port ID ${s.params.domain_port_id})`;
				expected = [
					{
						site_id: s.params.site_id,
						domain_port_id: s.params.domain_port_id,
						entries: [s.params.ip_black_list],
						blocked: [sent],
						refused: [],
						success: true,
						operation: title,
						summary,
					},
				];
			}
		}
		const summarized = s.id !== 'applicationProtection.ipBlacklist.add' && op.safety !== 'read';
		const shown = items.map((i) => wireOnly(s.id, summarized ? withoutSummary(s.id, i, s.params) : i));
		assert.deepEqual(shown, JSON.parse(JSON.stringify(expected)), `${s.id}: node output is the unwrapped result`);
		assert.deepEqual(
			nodeRun(res, s.name).pairedItems,
			items.map(() => ({ item: 0 })),
			`${s.id}: pairedItem`,
		);
		executed.add(s.id);
	}
	return out;
}

const step = (id: string, extra: Record<string, unknown> = {}, nodeExtra?: Record<string, unknown>): Step => ({
	name: id,
	id,
	params: sample(id, extra),
	extra: nodeExtra,
});

test('the runner is the real n8n 2.x engine on Node 24', () => {
	assert.match(runner.versions.n8n, /^2\./);
	assert.match(runner.versions.node, /^v24\./);
	assert.ok(runner.versions.n8nCore && runner.versions.n8nWorkflow);
});

test('authorization: connect, access token, refresh token, app token — outputs redacted, no secret in execution data', async () => {
	const conn = await direct.connect({
		app_id: APP.appId,
		redirect_uri: 'https://app.example.com/cb',
		state: 'inproc-state-1',
		customer_id: ids.customer_id,
	});
	const conn2 = await direct.connect({
		app_id: APP.appId,
		redirect_uri: 'https://app.example.com/cb',
		state: 'inproc-state-2',
		customer_id: ids.customer_id,
	});
	const user = (await direct.call('authorization.accessToken', {
		app_id: APP.appId,
		secret: APP.secret,
		code: conn2.code,
	})) as { refresh_token: string };
	const steps: Step[] = [
		{
			name: 'Connect',
			id: 'authorization.connect',
			params: { redirect_uri: 'https://app.example.com/cb', state: 'inproc-state-3', customer_id: ids.customer_id },
		},
		{ name: 'Exchange code', id: 'authorization.accessToken', params: { code: conn.code } },
		{ name: 'Refresh', id: 'authorization.refreshToken', params: { refresh_token: user.refresh_token } },
		{ name: 'App token', id: 'authorization.appToken', params: {} },
	];
	const out = await runSteps('authorization', steps);
	assert.equal(out.Connect[0].state, 'inproc-state-3');
	for (const s of steps) {
		const [item] = out[s.name];
		assert.equal(out[s.name].length, 1);
		assert.equal(item.redacted, true, s.name);
		for (const k of ['code', 'access_token', 'refresh_token'])
			if (k in item) assert.equal(item[k], '***', `${s.name}.${k}`);
		executed.add(s.id);
	}
	assert.ok(typeof out['Exchange code'][0].expires_in === 'number' && out['App token'][0].expires_in > 0);
	// Get an app token says what it did instead of a masked token: the kind, until when it is valid.
	const app = out['App token'][0];
	assert.ok(!('access_token' in app), 'no token field, not even masked');
	assert.match(String(app.token_kind), /^app token/);
	assert.equal(app.access_token_received, true);
	assert.ok(
		Math.abs(Date.parse(String(app.valid_until)) - (Date.now() + Number(app.expires_in) * 1000)) < 120_000,
		String(app.valid_until),
	);
	assert.match(String(out['Refresh'][0].token_kind), /^user token/);
	assert.equal(out['Refresh'][0].refresh_token_received, true);
	// None of the secrets the simulator issued, nor the app secret, is in the execution data.
	const text = JSON.stringify(out);
	const secrets = [APP.secret, ...sim.sim.tokens.keys(), ...sim.sim.refreshTokens.keys(), ...sim.sim.codes.keys()];
	for (const s of secrets) assert.ok(!text.includes(s), 'a secret leaked into node output');
});

test('customer: get, and list with Return All walking every page', async () => {
	const out = await runSteps('customer', [step('customer.get'), step('customer.list')]);
	const all = sim.sim.snapshot().customers as Array<{ customer_id: string; customer_name: string }>;
	assert.equal(out['customer.get'][0].customer_name, all.find((c) => c.customer_id === ids.customer_id)?.customer_name);
	assert.deepEqual(out['customer.list'].map((c) => c.customer_id).sort(), all.map((c) => c.customer_id).sort());
	assert.ok(
		proxy.records.filter((r) => (r.tag as LogEntry)?.opId === 'customer.list').length >= 2,
		'several pages fetched',
	);
});

test('application protection: auth base / bypass / http / ip, header compliance', async () => {
	await runSteps('auth', [
		step('applicationProtection.authBase.set'),
		step('applicationProtection.authBase.get'),
		step('applicationProtection.authBypass.add'),
		step('applicationProtection.authBypass.list'),
	]).then(async (out) => {
		const rec = out['applicationProtection.authBypass.list'].find((b) => b.uri === '/health');
		assert.ok(rec, 'the bypass added through n8n is listed');
		await runSteps('auth bypass delete', [step('applicationProtection.authBypass.delete', { url_id: rec.url_id })]);
		const left = (await direct.call(
			'applicationProtection.authBypass.list',
			sample('applicationProtection.authBypass.list'),
		)) as Array<{ url_id: number }>;
		assert.ok(!left.some((b) => b.url_id === rec.url_id), 'deleted in the simulator');
	});
	const out = await runSteps('auth http/ip, header compliance', [
		step('applicationProtection.authHttp.set'),
		step('applicationProtection.authHttp.get'),
		step('applicationProtection.authIp.set'),
		step('applicationProtection.authIp.get'),
		step('applicationProtection.headerCompliance.set'),
		step('applicationProtection.headerCompliance.get'),
	]);
	assert.equal(out['applicationProtection.authHttp.get'][0].max_http_request, 120);
	assert.deepEqual(out['applicationProtection.authIp.get'][0].action_ratelimit, {
		duration: 300,
		ratelimit_rps: 50,
		threshold_rps: 100,
	});
});

test('application protection: HTTP filter create → get → update → delete, chained with n8n expressions', async () => {
	const ref = `={{ String($('applicationProtection.httpFilter.create').item.json.p_flag_id) }}`;
	const out = await runSteps('http filter', [
		step('applicationProtection.httpFilter.create'),
		{ ...step('applicationProtection.httpFilter.list') },
		{ ...step('applicationProtection.httpFilter.get', { p_flag_id: ref }), extra: { p_flag_id: ref } },
		{ ...step('applicationProtection.httpFilter.update', { p_flag_id: ref }), extra: { p_flag_id: ref } },
		{ ...step('applicationProtection.httpFilter.delete', { p_flag_id: ref }), extra: { p_flag_id: ref } },
	]);
	const pid = String(out['applicationProtection.httpFilter.create'][0].p_flag_id);
	assert.ok(
		out['applicationProtection.httpFilter.list'].some((f) => String(f.p_flag_id) === pid),
		'created filter listed',
	);
	assert.equal(out['applicationProtection.httpFilter.get'][0].p_name, 'block-admin');
	const [updated] = out['applicationProtection.httpFilter.update'];
	assert.equal(updated.success, true);
	assert.equal(String(updated.p_flag_id), pid, 'the output names the policy it changed');
	assert.match(String(updated.summary), /^HTTP Filter Policy › Update: /);
	const paths = proxy.records
		.filter((r) =>
			['applicationProtection.httpFilter.update', 'applicationProtection.httpFilter.delete'].includes(
				(r.tag as LogEntry)?.opId ?? '',
			),
		)
		.map((r) => r.url);
	assert.ok(
		paths.length === 2 && paths.every((u) => u.includes(`/${pid}`)),
		`expression resolved to the new id: ${paths.join(' ')}`,
	);
});

test('application protection: IP lists, X-Forwarded-For, status codes, switches, UA blacklist, URL bypass', async () => {
	// IP Blacklist › Add reads both lists before it adds: in its own workflow, so those reads are not the Get step's.
	const added = await runSteps('blacklist add', [step('applicationProtection.ipBlacklist.add')]);
	const out = await runSteps('lists and settings', [
		step('applicationProtection.ipBlacklist.get'),
		step('applicationProtection.ipBlacklist.remove'),
		step('applicationProtection.ipWhitelist.add'),
		step('applicationProtection.ipWhitelist.get'),
		step('applicationProtection.ipWhitelist.remove'),
		step('applicationProtection.xForwardedFor.set'),
		step('applicationProtection.xForwardedFor.get'),
		step('applicationProtection.statusCodes.create'),
		step('applicationProtection.statusCodes.list'),
		step('applicationProtection.statusCodes.update'),
		step('applicationProtection.statusCodes.delete'),
		step('applicationProtection.switch.set'),
		step('applicationProtection.switch.list'),
		step('applicationProtection.uaBlacklist.add'),
		step('applicationProtection.urlBypass.delete'),
	]);
	assert.ok(
		out['applicationProtection.ipBlacklist.get'].some((e) => e.start_ip === '198.51.100.0'),
		'blacklist entry, one item per entry',
	);
	assert.ok(out['applicationProtection.ipWhitelist.get'].some((e) => e.start_ip === '198.51.100.0'));
	assert.ok(out['applicationProtection.statusCodes.list'].some((e) => e.error_code === 404));
	assert.deepEqual(added['applicationProtection.ipBlacklist.add'][0].blocked, ['198.51.100.0-198.51.100.255']);
});

test('dashboard: DDoS events over 75 days (split into ≤31-day windows, paged), event detail, traffic, flow-down over 200 days', async () => {
	const now = sim.sim.nowSec();
	const evParams = sample('dashboard.ddosEvents', {
		start_time: formatYmdhms(now - 75 * 86400),
		end_time: formatYmdhms(now),
	});
	delete evParams.num; // the node pages by itself (no Page Size field): 50 per request
	delete evParams.start;
	const fdParams = sample('dashboard.flowDownEvents', { start_time: String(now - 200 * 86400), end_time: String(now) });
	const mark = proxy.mark();
	const out = await runSteps('dashboard lists', [
		{ name: 'DDoS events', id: 'dashboard.ddosEvents', params: evParams, skipSent: ['start_time', 'end_time', 'num'] },
		{
			name: 'Flow-down events',
			id: 'dashboard.flowDownEvents',
			params: fdParams,
			skipSent: ['start_time', 'end_time'],
		},
	]);
	const events = out['DDoS events'];
	assert.ok(events.length >= 1, 'the running attack is listed');
	const evReqs = proxy.since(mark).filter((r) => (r.tag as LogEntry).opId === 'dashboard.ddosEvents');
	const windows = new Set(
		evReqs.map((r) => {
			const q = (r.tag as LogEntry).query;
			return `${q.start_time}|${q.end_time}`;
		}),
	);
	assert.equal(windows.size, 3, `75 days → 3 windows: ${[...windows].join(' ')}`);
	assert.deepEqual([...new Set(evReqs.map((r) => (r.tag as LogEntry).query.num))], ['50'], "the node's own page size");
	const fdWindows = new Set(
		proxy
			.since(mark)
			.filter((r) => (r.tag as LogEntry).opId === 'dashboard.flowDownEvents')
			.map((r) => (r.tag as LogEntry).query.start_time),
	);
	assert.equal(fdWindows.size, 3, '200 days → 3 windows of ≤90 days');

	const detail = await runSteps('dashboard reads', [
		step('dashboard.eventDetail', { event_id: events[0].alert_id }),
		step('dashboard.activeMitigation'),
		step('dashboard.currentTraffic'),
		step('dashboard.isUnderAttack'),
		step('dashboard.networkSummary'),
	]);
	assert.ok(detail['dashboard.eventDetail'][0].threat_map.bps.length >= 1);
	assert.equal(detail['dashboard.isUnderAttack'][0].status, 1);
});

test('detection and overview', async () => {
	const out = await runSteps('detection/overview', [
		step('detection.setMode'),
		step('detection.setPolicy'),
		step('detection.getPolicy'),
		step('overview.setProfile', { profile_id: 'auto-web' }),
		step('overview.setSwitch'),
		step('overview.getSwitch'),
	]);
	assert.equal(out['detection.getPolicy'][0].model, 1);
	assert.equal(out['overview.getSwitch'][0].auto_profile, 'auto-web');
});

test('operations no test above names (a newly added one) run through n8n with their sample', async () => {
	const rest = catalog.filter((o) => !executed.has(o.id)).map((o) => step(o.id));
	if (rest.length > 0) await runSteps('the rest', rest);
});

test('all operations ran through n8n and the simulator logged each one', () => {
	assert.equal(catalog.length, specOperationCount());
	assert.deepEqual(
		catalog.map((o) => o.id).filter((id) => !executed.has(id)),
		[],
	);
	const fromN8n = new Set(proxy.records.map((r) => (r.tag as LogEntry | undefined)?.opId));
	for (const op of catalog) assert.ok(fromN8n.has(op.id), `n8n sent ${op.id}`);
});

test('invalid input: NodeOperationError names the field and the rule; nothing is sent', async () => {
	const before = sim.sim.requests().length;
	const mark = proxy.mark();
	const params = toNodeParameters(
		getOperation('applicationProtection.statusCodes.create'),
		sample('applicationProtection.statusCodes.create', {
			error_code: 302,
			error_page_type: 0,
			error_page_info: undefined,
		}),
	);
	const res = await exec(chain('invalid', [ssNode('Bad status code', params)]));
	assert.equal(res.status, 'error');
	const err = nodeRun(res, 'Bad status code').error;
	assert.ok(err);
	assert.equal(err.name, 'NodeOperationError');
	assert.match(
		err.message,
		/^Status Code Overwrite › Create: Status Code must be an HTTP code from 400 to 417.*Nothing was sent\.$/,
	);
	// Issue 40: errors speak the field's label (the message above), never the parameter's name.
	assert.doesNotMatch(err.description ?? '', /error_code/);
	assert.equal(res.error?.message, err.message, 'the execution fails with that error');
	assert.equal(sim.sim.requests().length, before, 'no request reached the service');
	assert.equal(proxy.since(mark).length, 0, 'n8n sent nothing');
});

test('IP Blacklist › Add with a list in one item: merged ranges, one POST each; already blocked and whitelisted entries refused with the reason', async () => {
	const at = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	await direct.call('applicationProtection.ipWhitelist.add', { ...at, ip_white_list: '192.0.2.200' });
	await direct.call('applicationProtection.ipBlacklist.add', { ...at, ip_black_list: '192.0.2.100' });
	const mark = sim.sim.log.at(-1)?.seq ?? 0;
	const params = {
		resource: 'applicationProtection.ipBlacklist',
		operation: 'add',
		...at,
		ip_black_list: '={{ $json.sources }}',
	};
	const sources = [
		'192.0.2.1',
		'192.0.2.2',
		'192.0.2.3',
		'192.0.2.0/30',
		'192.0.2.8-192.0.2.9',
		'192.0.2.100',
		'192.0.2.200',
		'192.0.2.1',
	];
	const res = await exec(chain('block a list', [ssNode('Block', params)], [{ sources }]));
	assertSuccess(res, ['Block']);
	const [item] = nodeRun(res, 'Block').items;
	assert.deepEqual(item.blocked, ['192.0.2.0-192.0.2.3', '192.0.2.8-192.0.2.9']);
	assert.deepEqual(item.refused, [
		{ entry: '192.0.2.100', reason: 'already blacklisted' },
		{ entry: '192.0.2.200', reason: 'whitelisted' },
	]);
	assert.equal(item.entries.length, sources.length);
	const posts = sim.sim.requests({ op: 'applicationProtection.ipBlacklist.add', since: mark });
	assert.deepEqual(
		posts.map((p) => (p.body as Record<string, string>).ip_black_list),
		['192.0.2.0-192.0.2.3', '192.0.2.8-192.0.2.9'],
	);
	// A bad entry anywhere in the list stops the step before anything is sent.
	const mark2 = sim.sim.log.at(-1)?.seq ?? 0;
	const bad = await exec(
		chain(
			'block a bad list',
			[ssNode('Block', params, { continueOnFail: true })],
			[{ sources: ['192.0.2.50', '192.0.2.300'] }],
		),
	);
	assert.match(
		nodeRun(bad, 'Block').items[0].error,
		/^IP Blacklist › Block: IP Address or Range must be an IPv4 address/,
	);
	assert.equal(sim.sim.requests({ since: mark2 }).filter((r) => r.method === 'POST').length, 0, 'nothing sent');
	executed.add('applicationProtection.ipBlacklist.add');
});

test('continueOnFail, per item: a bad item and a service error become output items paired with their input; the workflow goes on', async () => {
	const mark = proxy.mark();
	// Two input items (pinned on the trigger); the node reads the address per item through an n8n expression.
	const wl = toNodeParameters(
		getOperation('applicationProtection.ipWhitelist.add'),
		sample('applicationProtection.ipWhitelist.add'),
		{ ip_white_list: '={{ $json.ip }}' },
	);
	const missing = toNodeParameters(
		getOperation('applicationProtection.httpFilter.get'),
		sample('applicationProtection.httpFilter.get', { p_flag_id: '987654' }),
	);
	const res = await exec(
		chain(
			'continue on fail',
			[
				ssNode('Whitelist per item', wl, { continueOnFail: true }),
				ssNode('Unknown filter', missing, { continueOnFail: true, executeOnce: true }),
				ssNode(
					'Is under attack',
					toNodeParameters(getOperation('dashboard.isUnderAttack'), sample('dashboard.isUnderAttack')),
					{ executeOnce: true },
				),
			],
			[{ ip: '198.51.100.77' }, { ip: '10.0.0.300' }],
		),
	);
	assertSuccess(res, ['Whitelist per item', 'Unknown filter', 'Is under attack']);
	const wlRun = nodeRun(res, 'Whitelist per item');
	assert.equal(wlRun.items.length, 2);
	assert.equal(wlRun.items[0].success, true);
	assert.equal(
		wlRun.items[0].ip_white_list,
		'198.51.100.77-198.51.100.77',
		'the output names the entry written (as sent: start-end)',
	);
	assert.match(
		String(wlRun.items[0].summary),
		/^IP Whitelist › Allow: IP Address or Range 198\.51\.100\.77-198\.51\.100\.77 \(Site ID \d+, Domain-Port ID \d+\)$/,
	);
	assert.match(wlRun.items[1].error, /^IP Whitelist › Allow: IP Address or Range must be an IPv4 address/);
	assert.deepEqual(
		wlRun.items[1].issues.map((i: { field: string }) => i.field),
		['ip_white_list'],
	);
	assert.equal(wlRun.items[1].operation, 'applicationProtection.ipWhitelist.add');
	assert.deepEqual(wlRun.pairedItems, [{ item: 0 }, { item: 1 }]);
	const [a] = nodeRun(res, 'Unknown filter').items;
	assert.equal(a.code, 40401, JSON.stringify(a));
	assert.equal(a.operation, 'applicationProtection.httpFilter.get');
	assert.equal(nodeRun(res, 'Is under attack').items[0].status, 1, 'the next node ran');
	const recs = proxy.since(mark);
	const adds = recs.filter((r) => (r.tag as LogEntry).opId === 'applicationProtection.ipWhitelist.add');
	assert.equal(adds.length, 1, 'only the valid item was sent');
	// The item's address, sent as the one-address range the catalog normalizes entries to.
	assert.equal(
		((adds[0].tag as LogEntry).body as Record<string, unknown>).ip_white_list,
		'198.51.100.77-198.51.100.77',
	);
	assert.equal(recs.filter((r) => (r.tag as LogEntry).opId === 'applicationProtection.httpFilter.get').length, 1);
});

test("mapped parameters ({{ $json.path }}) read straight from each item give exactly what n8n's evaluator gives", async () => {
	// The node reads `={{ $json.a.b }}` / `={{ $json["a"][0] }}` from the item itself (nodes/SecurityService/actions/
	// params.ts); the same expressions wrapped in parentheses are not that form, so n8n evaluates them. Both must
	// yield the same requests and the same output items, for present, numeric, nested, missing and unknown values.
	const items = [
		{ site_id: ids.site_id, s: { list: [ids.site_id] } },
		{ site_id: Number(ids.site_id), s: { list: [Number(ids.site_id)] } },
		{ site_id: '99999', s: { list: ['99999'] } },
		{ other: 1, s: { list: [] } },
		{ site_id: ` ${ids.site_id}`, s: { list: [null] } },
	];
	const op = getOperation('dashboard.isUnderAttack');
	const runWith = async (label: string, expression: string) => {
		const mark = proxy.mark();
		const res = await exec(
			chain(
				`mapped ${label}`,
				[ssNode(label, toNodeParameters(op, sample(op.id), { site_id: expression }), { continueOnFail: true })],
				items,
			),
		);
		assertSuccess(res, [label]);
		const run = nodeRun(res, label);
		const urls = proxy
			.since(mark)
			.map((r) => r.url.replace(/access_token=[^&]*/, 'access_token=…'))
			.sort();
		return { out: run.items, paired: run.pairedItems, urls };
	};
	for (const [fast, evaluated] of [
		['={{ $json.site_id }}', '={{ ($json.site_id) }}'],
		['={{ $json["s"]["list"][0] }}', '={{ ($json["s"]["list"][0]) }}'],
	]) {
		const a = await runWith(`fast ${fast}`, fast);
		const b = await runWith(`evaluated ${evaluated}`, evaluated);
		assert.deepEqual(a.out, b.out, `${fast}: same output items as n8n's evaluation`);
		assert.deepEqual(a.paired, b.paired);
		assert.deepEqual(a.urls, b.urls, `${fast}: same requests`);
		assert.equal(a.out.length, items.length);
		assert.equal(a.out[0].status, 1, 'the attacked site, by string id');
		assert.equal(a.out[1].status, 1, 'the attacked site, by numeric id');
		assert.ok(a.out[2].error, 'unknown site → an error item');
		assert.match(String(a.out[3].error ?? ''), /Site ID is required/, 'missing value → the field is named');
	}
});

test('token expired mid-run: rejected once, renewed through preAuthentication, retried; the new token is persisted by n8n', async () => {
	const beforeCred = await runner.getCredential('cred-app');
	assert.ok(
		beforeCred && typeof beforeCred.accessToken === 'string' && beforeCred.accessToken !== '',
		'a token was stored by the first run',
	);
	sim.sim.expireTokens();
	const mark = proxy.mark();
	await runSteps('after expiry', [
		{ ...step('applicationProtection.authBase.set', { threshold_tps: 321 }), renewal: true },
	]);
	const seen = proxy.since(mark).map((r) => `${(r.tag as LogEntry).opId}:${envelope(r).code}`);
	assert.deepEqual(seen, [
		'applicationProtection.authBase.set:40101',
		'authorization.appToken:0',
		'applicationProtection.authBase.set:0',
	]);
	const afterCred = await runner.getCredential('cred-app');
	assert.notEqual(afterCred?.accessToken, beforeCred.accessToken, 'n8n saved the renewed token in the credential');
	assert.ok(Number(afterCred?.expiresAt) > Date.now());
	const got = (await direct.call(
		'applicationProtection.authBase.get',
		sample('applicationProtection.authBase.get'),
	)) as { threshold_tps: number };
	assert.equal(got.threshold_tps, 321);
});

test('no secret in any execution data; every exchange went through the proxy', () => {
	assert.ok(executions.length >= 12);
	const text = JSON.stringify(executions);
	const secrets = [APP.secret, ...sim.sim.tokens.keys(), ...sim.sim.refreshTokens.keys(), ...sim.sim.codes.keys()];
	assert.ok(secrets.length > 5);
	for (const s of secrets) assert.ok(!text.includes(s), 'a secret leaked into execution data');
	assert.deepEqual(proxy.errors, []);
});

test('timings', () => {
	const total = Object.values(timings).reduce((a, b) => a + b, 0);
	console.log(
		`in-process n8n: ${Object.keys(timings).length} workflows, ${total} ms executing (${JSON.stringify(timings)})`,
	);
	assert.ok(total > 0);
});

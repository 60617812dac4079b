// Fuzz, in-process entry points: the API client (every operation, over undici to the real simulator), the plan
// and desired-state parsers, and the Runbook node's parameter checks. Properties: an invalid input gets a clear
// error naming the field within 2 s, bounded in size, and nothing is sent; a path id either is rejected or reaches
// exactly its own path.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { catalog } from '../../api/catalog/index.ts';
import { createClient } from '../../api/client.ts';
import { ValidationError } from '../../api/errors.ts';
import { ID_RE, MAX_QUERY_STRING, idProblem, sizeIssues } from '../../api/limits.ts';
import type { Transport } from '../../api/transport/types.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { startSimulator } from '../../simulator/index.mts';
import { PlanError, parsePlan } from '../../api/runbook/plan.ts';
import { DesiredStateError, checkDesiredState } from '../../api/runbook/desired.ts';
import { SecurityServiceRunbook } from '../../nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.ts';
import { samples } from '../helpers/samples.mts';
import {
	PATH_TRICKS,
	TEN_K_BAD_IPS,
	THREE_MB,
	Tally,
	check,
	describeValue,
	hostileValue,
	safeId,
	setAt,
	timed,
} from './hostile.mts';
import '../helpers/started.mts'; // a failing test prints what this file started

const tally = new Tally('inputs');
const MAX_MS = 2000;
const MAX_MESSAGE = 4096;

const sim = await startSimulator({ port: 0, appId: 'fuzz-app', secret: 'fuzz-secret-0123', seed: 3, clock: 'manual' });
const undici = createUndiciTransport({ connections: 4 });
let sent = 0;
const transport: Transport = (req) => {
	sent++;
	return undici(req);
};
const client = createClient({
	baseUrl: sim.url,
	transport,
	credentials: { appId: 'fuzz-app', secret: 'fuzz-secret-0123', tokenKind: 'app' },
	retries: 0,
	timeoutMs: 3000,
});
after(async () => {
	tally.report();
	await undici.close();
	await sim.close();
});

const ops = catalog.filter((o) => o.encoding !== 'redirect' && o.resource !== 'authorization');
/** Path ids under the safe alphabet (p_flag_id and url_id are integers with rules of their own). */
const ID_FIELDS = new Set(['site_id', 'domain_port_id', 'customer_id', 'network_id', 'host_id', 'event_id']);
const idFieldsOf = (op: (typeof ops)[number]) => op.fields.filter((f) => f.in === 'path' && ID_FIELDS.has(f.name));
const withIds = ops.filter((o) => idFieldsOf(o).length > 0);
const validId = (v: unknown) =>
	(typeof v === 'string' && ID_RE.test(v)) ||
	(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && ID_RE.test(String(v)));

function expectRejected(e: unknown, field: string, ms: number, sentBefore: number, logBefore: number) {
	assert.ok(e instanceof ValidationError, `ValidationError expected, got ${String(e).slice(0, 200)}`);
	assert.ok(
		e.issues.some((i) => i.field === field || i.field.startsWith(`${field}.`) || i.field === '(request)'),
		`issue on ${field}: ${e.message.slice(0, 300)}`,
	);
	assert.ok(e.message.length <= MAX_MESSAGE, `message of ${e.message.length} characters`);
	assert.ok(ms < MAX_MS, `${ms} ms`);
	assert.equal(sent, sentBefore, 'nothing sent');
	assert.equal(sim.sim.requests().length, logBefore, 'nothing in the simulator log');
}

test(
	'client: a path id is rejected (field named, nothing sent) or reaches exactly its own path',
	tally.wrap(async () => {
		const gen = fc.record({
			op: fc.constantFrom(...withIds),
			value: fc.oneof({ weight: 3, arbitrary: hostileValue }, { weight: 1, arbitrary: safeId }),
			which: fc.nat(),
		});
		await check(
			fc.asyncProperty(gen, async ({ op, value, which }) => {
				tally.hit('client path ids');
				const fields = idFieldsOf(op);
				const f = fields[which % fields.length];
				const params = { ...samples[op.id], [f.name]: value };
				const sentBefore = sent;
				const logBefore = sim.sim.requests().length;
				const r = await timed(() => client.call(op.id, params));
				if (!validId(value)) {
					expectRejected(r.ok ? undefined : r.error, f.name, r.ms, sentBefore, logBefore);
					return;
				}
				if (!r.ok)
					assert.ok(
						!(r.error instanceof ValidationError) || !r.error.issues.some((i) => i.field === f.name),
						`valid id rejected: ${describeValue(value)}: ${String((r.error as Error).message).slice(0, 300)}`,
					);
				const mine = sim.sim
					.requests()
					.slice(logBefore)
					.filter((x) => x.opId === op.id);
				if (r.ok || !(r.error instanceof ValidationError)) {
					assert.equal(mine.length, 1, `one ${op.id} request`);
					let path = op.path;
					for (const x of op.fields.filter((y) => y.in === 'path'))
						path = path.replace(`{${x.name}}`, encodeURIComponent(String(params[x.name])));
					assert.equal(mine[0].path, path, 'the id never changes which path is called');
				}
			}),
			{ numRuns: 400, seed: 16 },
		);
	}),
);

test(
	'client: hostile values in any field — a bounded error naming the field within 2 s and nothing sent, or a bounded request',
	tally.wrap(async () => {
		const gen = fc.record({ op: fc.constantFrom(...ops), value: hostileValue, which: fc.nat() });
		await check(
			fc.asyncProperty(gen, async ({ op, value, which }) => {
				tally.hit('client fields');
				const fields = op.fields.filter((f) => f.constant === undefined && !f.local);
				if (!fields.length) return;
				const f = fields[which % fields.length];
				const params = { ...samples[op.id], [f.name]: value };
				const sentBefore = sent;
				const logBefore = sim.sim.requests().length;
				const r = await timed(() => client.call(op.id, params));
				if (!r.ok && r.error instanceof ValidationError) {
					expectRejected(r.error, f.name, r.ms, sentBefore, logBefore);
					return;
				}
				// accepted: whatever was sent stays within the bounds (no megabyte URL, no path change)
				const urlish = f.in !== 'body' || op.encoding === 'query';
				if (typeof value === 'string' && urlish)
					assert.ok(value.length <= MAX_QUERY_STRING, `a ${value.length}-character ${f.name} was sent`);
				assert.ok(r.ms < 5000, `${r.ms} ms`);
			}),
			{ numRuns: 400, seed: 1616 },
		);
	}),
);

// ---------------------------------------------------------------- plans and desired states

const basePlan = {
	site_id: '20001',
	customer_id: '10001',
	domain_ports: ['30001'],
	event_id: 'A1',
	detection: { rapidMode: true, thresholds: [{ name: 'tcp_syn', factor: 0.5 }] },
	blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0, protectedRanges: ['198.51.100.2'] },
	ipAuth: {
		action: 'ratelimit',
		enable: 1,
		mode: 2,
		action_ratelimit: { duration: 120, ratelimit_rps: 50, threshold_rps: 100 },
	},
	switches: [{ name: 'p_auth', enable: 1 }],
	approval: { required: true, timeoutSeconds: 60, onTimeout: 'reject' },
	cooldownSeconds: 2,
	pollSeconds: 1,
	execution: { parallel: true, localActivities: 'all', blacklistConcurrency: 1 },
};
export const PLAN_PATHS = [
	'site_id',
	'customer_id',
	'network_id',
	'host_id',
	'event_id',
	'domain_ports',
	'domain_ports.0',
	'approval',
	'approval.required',
	'approval.timeoutSeconds',
	'approval.onTimeout',
	'detection',
	'detection.rapidMode',
	'detection.thresholds',
	'detection.thresholds.0',
	'detection.thresholds.0.name',
	'detection.thresholds.0.factor',
	'detection.thresholds.0.low_pps',
	'blacklist',
	'blacklist.topN',
	'blacklist.metric',
	'blacklist.minPercent',
	'blacklist.protectedRanges',
	'blacklist.protectedRanges.0',
	'ipAuth',
	'ipAuth.action',
	'ipAuth.enable',
	'ipAuth.action_ratelimit',
	'ipAuth.action_ratelimit.duration',
	'switches',
	'switches.0',
	'switches.0.name',
	'switches.0.enable',
	'cooldownSeconds',
	'pollSeconds',
	'maxDurationSeconds',
	'activityTimeoutSeconds',
	'execution',
	'execution.localActivities',
	'execution.blacklistConcurrency',
	'unknown_field',
];

function checkBounded(e: { message: string; issues: { field: string }[] }, path: string, ms: number) {
	assert.ok(ms < MAX_MS, `${ms} ms`);
	assert.ok(e.message.length <= MAX_MESSAGE, `message of ${e.message.length} characters`);
	assert.ok(e.issues.length <= 10, `${e.issues.length} issues kept`);
	const top = path.split('.')[0];
	assert.ok(
		e.issues.some(
			(i) =>
				i.field.startsWith(path) ||
				i.field === top ||
				i.field.startsWith(`${top}.`) ||
				(top === 'unknown_field' && i.field === '(plan)'),
		),
		`an issue names ${path}: ${e.message.slice(0, 300)}`,
	);
}

test(
	'plans: a hostile value anywhere → PlanError naming the field, bounded, within 2 s (or a valid plan)',
	tally.wrap(async () => {
		await check(
			fc.asyncProperty(fc.constantFrom(...PLAN_PATHS), hostileValue, async (path, value) => {
				tally.hit('plan parser');
				const plan = setAt(basePlan, path, value);
				const r = await timed(() => parsePlan(plan));
				if (r.ok) {
					// accepted: its ids are safe and nothing in it is oversized
					for (const k of ['site_id', 'customer_id', 'network_id', 'host_id'] as const)
						assert.equal(idProblem(r.value[k]), undefined);
					assert.equal(sizeIssues(r.value, { maxString: 1024, maxList: 1000 }).length, 0);
					return;
				}
				assert.ok(r.error instanceof PlanError, `PlanError, got ${String(r.error).slice(0, 200)}`);
				checkBounded(r.error, path, r.ms);
			}),
			{ numRuns: 600, seed: 160 },
		);
	}),
);

test(
	'plans: the named cases of the issue',
	tally.wrap(() => {
		const cases: [string, unknown, string, RegExp][] = [
			['site_id as a number', setAt(basePlan, 'site_id', 20001), 'site_id', /must be a string/],
			['site_id ".."', setAt(basePlan, 'site_id', '..'), 'site_id', /A–Z a–z 0–9/],
			['domain-port ".."', setAt(basePlan, 'domain_ports', ['..']), 'domain_ports.0', /A–Z a–z 0–9/],
			['3 MB site_id', setAt(basePlan, 'site_id', THREE_MB), 'site_id', /at most 1024 characters/],
			['1 MB event_id', setAt(basePlan, 'event_id', THREE_MB.slice(0, 1 << 20)), 'event_id', /at most/],
			[
				'1 MB switch name',
				setAt(basePlan, 'switches', [{ name: THREE_MB.slice(0, 1 << 20), enable: 1 }]),
				'switches.0.name',
				/at most/,
			],
			[
				'10,000 invalid IPs',
				setAt(basePlan, 'blacklist.protectedRanges', TEN_K_BAD_IPS),
				'blacklist.protectedRanges',
				/at most 1000 entries/,
			],
			['negative cooldown', setAt(basePlan, 'cooldownSeconds', -5), 'cooldownSeconds', /at least 0/],
			[
				'1000 invalid IPs: first 10 and a count',
				setAt(basePlan, 'blacklist.protectedRanges', TEN_K_BAD_IPS.slice(0, 1000)),
				'blacklist.protectedRanges.0',
				/IPv4/,
			],
		];
		for (const [what, plan, field, rule] of cases) {
			tally.hit('plan parser');
			const t0 = performance.now();
			assert.throws(
				() => parsePlan(plan),
				(e: unknown) => {
					assert.ok(e instanceof PlanError, what);
					const hit = e.issues.find((i) => i.field === field);
					assert.ok(hit, `${what}: issue on ${field}; got ${e.message.slice(0, 300)}`);
					assert.match(hit.rule, rule, what);
					assert.ok(e.message.length < MAX_MESSAGE, `${what}: ${e.message.length}`);
					return true;
				},
			);
			assert.ok(performance.now() - t0 < MAX_MS, what);
		}
		const many = (() => {
			try {
				parsePlan(setAt(basePlan, 'blacklist.protectedRanges', TEN_K_BAD_IPS.slice(0, 1000)));
			} catch (e) {
				return e as PlanError;
			}
		})();
		assert.match(many?.message ?? '', /\(and 990 more\)$/);
		assert.equal(many?.moreIssues, 990);
	}),
);

const baseDesired = {
	site_id: '20001',
	customer_id: '10001',
	detection: { model: 0, items: { tcp_syn: { is_enabled: 1, low_pps: '50K', high_pps: '200K' } } },
	domain_ports: {
		'30001': {
			switches: { p_filt: 1 },
			whitelistIncludes: ['192.0.2.10'],
			blacklistIncludes: ['203.0.113.0/24'],
			xForwardedFor: { mode: 'insert' },
		},
	},
};
const DESIRED_PATHS = [
	'site_id',
	'customer_id',
	'network_id',
	'host_id',
	'detection',
	'detection.model',
	'detection.items',
	'detection.items.tcp_syn',
	'detection.items.tcp_syn.low_pps',
	'detection.items.tcp_syn.is_enabled',
	'domain_ports',
	'domain_ports.30001',
	'domain_ports.30001.switches',
	'domain_ports.30001.switches.p_filt',
	'domain_ports.30001.whitelistIncludes',
	'domain_ports.30001.blacklistIncludes',
	'domain_ports.30001.xForwardedFor',
	'domain_ports.30001.xForwardedFor.mode',
	'unknown_field',
];

test(
	'desired states: a hostile value anywhere → DesiredStateError naming the field, bounded, within 2 s (or valid)',
	tally.wrap(async () => {
		await check(
			fc.asyncProperty(fc.constantFrom(...DESIRED_PATHS), hostileValue, async (path, value) => {
				tally.hit('desired-state parser');
				const r = await timed(() => checkDesiredState(setAt(baseDesired, path, value)));
				if (r.ok) return;
				assert.ok(r.error instanceof DesiredStateError, `DesiredStateError, got ${String(r.error).slice(0, 200)}`);
				const e = r.error;
				assert.ok(r.ms < MAX_MS && e.message.length <= MAX_MESSAGE && e.issues.length <= 10);
				const top = path.split('.')[0];
				assert.ok(
					e.issues.some(
						(i) =>
							i.field.startsWith(top) ||
							i.field === '(desired)' ||
							(path.startsWith('detection') && i.field === 'customer_id'),
					),
					`${path}: ${e.message.slice(0, 300)}`,
				);
			}),
			{ numRuns: 400, seed: 161 },
		);
		// a hostile domain-port key (it becomes a path segment)
		for (const key of PATH_TRICKS.filter((k) => idProblem(k))) {
			tally.hit('desired-state parser');
			assert.throws(
				() => checkDesiredState({ site_id: '20001', domain_ports: { [key]: {} } }),
				(e: unknown) => e instanceof DesiredStateError && /domain_ports/.test(e.message),
			);
		}
	}),
);

// ---------------------------------------------------------------- the Runbook node's own checks

interface Sent {
	url: string;
	body?: { input?: { payloads: { data: string }[] } };
}

/** Runs the node's execute() with one item; returns what it sent (n8n's request helper is where requests leave). */
async function runNode(params: Record<string, unknown>): Promise<{ error?: Error; sent: Sent[]; ms: number }> {
	const sentReqs: Sent[] = [];
	const node = {
		id: 'n',
		name: 'Runbook',
		type: 'CUSTOM.securityServiceRunbook',
		typeVersion: 1,
		position: [0, 0] as [number, number],
		parameters: {},
	};
	const ctx = {
		getInputData: () => [{ json: {} }],
		getNodeParameter: (name: string, _i: number, dflt?: unknown) => (name in params ? params[name] : dflt),
		getCredentials: async () => ({ address: 'http://127.0.0.1:1', namespace: 'default' }),
		getNode: () => node,
		continueOnFail: () => false,
		getExecutionId: () => 'exec-1',
		helpers: {
			// As n8n's helper answers the node's bounded exchange (returnFullResponse, body as sent: a JSON string).
			httpRequestWithAuthentication: async (
				_c: string,
				o: { url: string; body?: unknown; returnFullResponse?: boolean },
			) => {
				// DescribeTaskQueue (the node's check that a worker polls the queue): a read, answered as a server with a
				// worker would; it is not a request the property counts as sent.
				if (o.url.includes('/task-queues/')) {
					const pollers = { pollers: [{ identity: 'worker-1' }] };
					return o.returnFullResponse ? { statusCode: 200, headers: {}, body: JSON.stringify(pollers) } : pollers;
				}
				const body = typeof o.body === 'string' ? (JSON.parse(o.body) as Sent['body']) : (o.body as Sent['body']);
				sentReqs.push({ url: o.url, body });
				const answer = { runId: 'run-1', started: true };
				return o.returnFullResponse ? { statusCode: 200, headers: {}, body: JSON.stringify(answer) } : answer;
			},
		},
	};
	const t0 = performance.now();
	try {
		await new SecurityServiceRunbook().execute.call(ctx as never);
		return { sent: sentReqs, ms: performance.now() - t0 };
	} catch (error) {
		return { error: error as Error, sent: sentReqs, ms: performance.now() - t0 };
	}
}

test(
	'Runbook node: hostile plans and runbook ids — an error naming the parameter and nothing sent, or a request to exactly its path',
	tally.wrap(async () => {
		const start = (plan: unknown) => ({
			operation: 'start',
			plan: typeof plan === 'string' ? plan : JSON.stringify(plan),
			taskQueue: 'q',
			dryRun: false,
			workflowId: '',
		});
		await check(
			fc.asyncProperty(
				fc.constantFrom(
					'site_id',
					'customer_id',
					'network_id',
					'host_id',
					'event_id',
					'domain_ports',
					'domain_ports.0',
					'blacklist.protectedRanges',
					'switches.0.name',
					'secret',
				),
				hostileValue,
				async (path, value) => {
					tally.hit('Runbook node checks (plan)');
					const r = await runNode(start(setAt(basePlan, path, value)));
					assert.ok(r.ms < MAX_MS);
					if (r.error) {
						assert.equal(r.sent.length, 0, 'nothing sent');
						assert.match(r.error.message, /^Plan(\.[\w.]+)?: /, r.error.message.slice(0, 200));
						assert.ok(r.error.message.length < MAX_MESSAGE);
						return;
					}
					assert.equal(r.sent.length, 1);
					const plan = JSON.parse(
						Buffer.from(r.sent[0].body?.input?.payloads[0].data ?? '', 'base64').toString('utf8'),
					).plan;
					for (const k of ['site_id', 'customer_id'] as const)
						assert.equal(idProblem(plan[k]), undefined, `sent ${k} ${describeValue(plan[k])}`);
					assert.equal(sizeIssues(plan, { maxString: 1024, maxList: 1000 }).length, 0);
					assert.equal(
						new URL(r.sent[0].url).pathname,
						`/api/v1/namespaces/default/workflows/attack-response-${plan.site_id}`,
					);
				},
			),
			{ numRuns: 300, seed: 162 },
		);
		await check(
			fc.asyncProperty(
				fc.constantFrom('describe', 'cancel', 'query', 'signal'),
				fc.oneof(hostileValue, safeId),
				async (operation, runbook) => {
					tally.hit('Runbook node checks (runbook id)');
					const r = await runNode({ operation, runbook, query: 'state', signal: 'abort', by: 'n8n', reason: '' });
					if (r.error) {
						assert.equal(r.sent.length, 0, 'nothing sent');
						assert.match(r.error.message, /^Runbook: /);
						return;
					}
					const id = String(runbook).trim();
					const wid = /^\d+$/.test(id) ? `attack-response-${id}` : id;
					assert.ok(ID_RE.test(id) || /^[A-Za-z0-9][A-Za-z0-9._~-]{0,255}$/.test(id), `sent ${describeValue(runbook)}`);
					assert.ok(
						new URL(r.sent[0].url).pathname.startsWith(`/api/v1/namespaces/default/workflows/${wid}`),
						r.sent[0].url,
					);
				},
			),
			{ numRuns: 200, seed: 163 },
		);
		const huge = await runNode(start(JSON.stringify({ ...basePlan, blacklist: { protectedRanges: TEN_K_BAD_IPS } })));
		tally.hit('Runbook node checks (plan)');
		assert.equal(huge.sent.length, 0);
		assert.match(huge.error?.message ?? '', /^Plan\.blacklist\.protectedRanges: must have at most 1000 entries/);
		assert.equal(tally.failures.length, 0);
	}),
);

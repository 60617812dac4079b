/**
 * Issue 43 item 3: every machine-readable output of `secsvc` (`--json`, and the commands that print JSON) has the shape
 * docs/cli-json/ documents. One run of each command against a real dev server, worker and simulator; each output
 * checked against its documented shape (a field missing, of another type, or not documented fails), and every shape
 * the page documents is checked here.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunningWorker } from '../../worker/src/process/worker.mts';
import { checkCliJson, documentedOutputs } from '../helpers/cliJson.mts';
import { randomBytes } from 'node:crypto';
import {
	APP_ID,
	ATTACK_SOURCES,
	env,
	useDevServer,
	killChild,
	SECRET,
	spawnWorker,
	waitFor,
	plan,
	runCli,
	siteIds,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	type Ids,
} from './helpers.mts';

let sim: Awaited<ReturnType<typeof startSim>>;
let worker: RunningWorker;
let dir: string;
const queue = uniqueQueue('cli-json');
const checked = new Map<string, number>();

useDevServer({
	bundle: false,
	start: async () => {
		sim = await startSim(43);
		worker = await startInProcessWorker(env, sim.url, queue);
		dir = mkdtempSync(join(tmpdir(), 'secsvc-cli-json-'));
	},
	stop: async () => {
		await worker?.shutdown();
		await sim?.close();
		if (dir) rmSync(dir, { recursive: true, force: true });
	},
});

/** Runs `secsvc ARGS`, parses what it printed as JSON documents and checks each against the output `key`. */
async function json(
	key: string | string[],
	args: string[],
	code = 0,
	q = queue,
	extraEnv: Record<string, string> = {},
): Promise<unknown[]> {
	const r = await runCli(env, args, q, extraEnv);
	assert.equal(r.code, code, `secsvc ${args.join(' ')}: ${r.err}`);
	const docs = splitDocuments(r.out);
	const keys = Array.isArray(key) ? key : [key];
	assert.equal(docs.length, keys.length, `secsvc ${args.join(' ')} printed ${docs.length} JSON documents`);
	docs.forEach((d, i) => {
		const problems = checkCliJson(keys[i], d);
		assert.deepEqual(problems, [], `secsvc ${args.join(' ')} (${keys[i]}):\n${problems.join('\n')}`);
		checked.set(keys[i], (checked.get(keys[i]) ?? 0) + 1);
	});
	return docs;
}

/** The JSON documents of a command's output (a command may print more than one, each pretty-printed). */
function splitDocuments(text: string): unknown[] {
	const docs: unknown[] = [];
	let rest = text.trim();
	while (rest) {
		let end = rest.length;
		for (; end > 0; end = rest.lastIndexOf('\n', end - 1)) {
			try {
				docs.push(JSON.parse(rest.slice(0, end)));
				break;
			} catch {
				// a shorter prefix may be the first document
			}
		}
		assert.ok(end > 0, `not JSON: ${rest.slice(0, 200)}`);
		rest = rest.slice(end).trim();
	}
	return docs;
}

const file = (name: string, v: unknown) => {
	const f = join(dir, name);
	writeFileSync(f, typeof v === 'string' ? v : JSON.stringify(v));
	return f;
};

test('every JSON output of secsvc has its documented shape', { timeout: 600_000 }, async () => {
	const [a, b, c] = siteIds(sim.sim, 3) as [Ids, Ids, Ids];
	const blk = ['--seconds', '600', '--by', 'alice@soc', '--reason', 'cli json'];

	// Expiring blocks: one entry, several, a feed; list, extend, remove; the coordinator's holds.
	await json('block add', ['block', 'add', a.site_id, a.domain_port_id, '192.0.2.1', ...blk]);
	await json('block add (several entries)', [
		'block',
		'add',
		a.site_id,
		a.domain_port_id,
		'192.0.2.2',
		'192.0.2.3',
		...blk,
	]);
	const feed = file('feed.txt', '198.51.100.1\n198.51.100.2\n# comment\n198.51.100.9\n');
	const [fed] = (await json('block add --file', [
		'block',
		'add',
		a.site_id,
		a.domain_port_id,
		'--file',
		feed,
		...blk,
	])) as [{ blocks: { expiresAt: string }[] }];
	assert.ok(
		fed.blocks.every((x) => !Number.isNaN(Date.parse(x.expiresAt))),
		'a script reads .blocks[].expiresAt',
	);
	await json('block list --json', ['block', 'list', a.site_id, '--json']);
	await json('block extend', [
		'block',
		'extend',
		a.site_id,
		a.domain_port_id,
		'192.0.2.1',
		'--seconds',
		'900',
		'--by',
		'alice@soc',
	]);
	await json('block remove', ['block', 'remove', a.site_id, a.domain_port_id, '192.0.2.1', '--by', 'alice@soc']);
	await json('holds --json', ['holds', a.site_id, '--json']);
	await json('holds release', ['holds', 'release', a.site_id, '--owner', 'attack-response-nobody']);

	// One API operation as a durable call.
	const read = JSON.stringify({ site_id: a.site_id });
	await json('call', ['call', 'dashboard.isUnderAttack', '--params', read]);
	await json('call --wait', ['call', 'dashboard.isUnderAttack', '--params', read, '--wait']);

	// Attack responses: a dry run waited for; one waiting at its approval gate, approved; inspect, list.
	const [dry] = (await json(
		['start', 'start --wait'],
		['start', '--plan', file('dry.json', plan(b)), '--dry-run', '--wait'],
	)) as [{ workflowId: string }];
	await json('inspect', ['inspect', dry.workflowId]);
	const gated = plan(c, {
		approval: { required: true, approvers: ['bob@soc'], timeoutSeconds: 300 },
		cooldownSeconds: 1,
	});
	await json('start', ['start', '--plan', file('gated.json', gated)]);
	sim.sim.startAttack({ site_id: c.site_id, duration: 0, sources: ATTACK_SOURCES });
	await waitForGate(c.site_id);
	await json('approve, reject', ['approve', c.site_id, '--by', 'bob@soc']);
	await json('inspect', ['inspect', c.site_id]);
	await json('list --json', ['list', '--json']);

	// Drift, report, schedules, deployment, fleet.
	const desired = { site_id: b.site_id, customer_id: b.customer_id, domain_ports: {} };
	await json('drift', ['drift', '--desired', file('desired.json', desired)]);
	await json('report --site', ['report', '--site', b.site_id, '--hours', '1']);
	await json('schedule create', ['schedule', 'create', 'report', '--site', b.site_id, '--every', '24h']);
	await json('schedule list', ['schedule', 'list']);
	await json('deploy status --json', ['deploy', 'status', '--json']);
	await json('deploy retire-check --json', ['deploy', 'retire-check', '--json']);
	const fleet = {
		fleet: 'clijson',
		intervalSeconds: 30,
		template: { cooldownSeconds: 60, pollSeconds: 10, maxDurationSeconds: 600 },
		sites: [{ customer_id: b.customer_id, site_id: b.site_id, domain_ports: [b.domain_port_id] }],
	};
	await json('fleet apply --json', ['fleet', 'apply', file('fleet.json', fleet), '--json']);
	await json('fleet status --json', ['fleet', 'status', '--fleet', 'clijson', '--json']);
});

test('the tenants commands: add, list, show, remove', { timeout: 300_000 }, async () => {
	// A tenant-mode worker process of its own (the payload codec's keys) on its own queue, against the same simulator.
	const tq = uniqueQueue('cli-json-tenants');
	const keys = `k1:${randomBytes(32).toString('base64')}`;
	const w = spawnWorker({ address: env.address }, sim.url, tq, { SECSVC_TENANTS: '1', SECSVC_PAYLOAD_KEYS: keys });
	let log = '';
	w.stdout?.on('data', (d) => (log += d));
	w.stderr?.on('data', (d) => (log += d));
	const tenantEnv = {
		SECSVC_BASE_URL: sim.url,
		SECSVC_APP_ID: APP_ID,
		SECSVC_SECRET: SECRET,
		SECSVC_PAYLOAD_KEYS: keys,
		SECSVC_REDIRECT_URI: 'https://install.app.example.com/installed',
	};
	// two sites of customers of their own (the first test's sites are the simulator's first three)
	const sites = siteIds(sim.sim, sim.sim.snapshot().sites.length);
	const own = sites.filter((x, i) => i > 2 && sites.findIndex((y) => y.customer_id === x.customer_id) === i);
	const [d, e] = own.slice(-2) as [Ids, Ids];
	const tenants = (key: string, args: string[]) => json(key, ['tenants', ...args], 0, tq, tenantEnv);
	try {
		await waitFor('the tenant worker polling', async () => /task queue/.test(log), 120_000);
		const view = 'tenants add, install, show --json, remove';
		await tenants(view, ['add', '--customer', d.customer_id, '--app', '--sites', d.site_id]);
		await tenants(view, ['install', '--customer', e.customer_id, '--sites', e.site_id]);
		await tenants('tenants list --json', ['list', '--json']);
		await tenants(view, ['show', d.customer_id, '--json']);
		await tenants(view, ['remove', d.customer_id]);
	} finally {
		await killChild(w);
	}
});

test('every output docs/cli-json/ documents was checked above', () => {
	const missed = documentedOutputs().filter((o) => !checked.has(o.key));
	assert.deepEqual(missed, [], 'every output docs/cli-json/ documents is checked by this file');
});

test("every output past its first version is named in the README's changelog", () => {
	const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
	const changelog = /^## Changelog\n([\s\S]*?)(?=^## |$(?![\s\S]))/m.exec(readme)?.[1] ?? '';
	assert.match(changelog, /docs\/cli-json\//, 'the changelog links the shapes');
	for (const { key, version } of documentedOutputs())
		if (version > 1)
			assert.ok(changelog.includes(`\`${key}\` v${version}`), `README changelog: \`${key}\` v${version}`);
});

async function waitForGate(site: string): Promise<void> {
	for (let i = 0; i < 120; i++) {
		const r = await runCli(env, ['inspect', site], queue);
		if (r.code === 0 && /"phase": "awaiting-approval"/.test(r.out)) return;
		await new Promise((res) => setTimeout(res, 500));
	}
	assert.fail(`the runbook on ${site} never reached its approval gate`);
}

/**
 * Chaos: a real Temporal dev server that keeps its state in a SQLite file (`--db-filename`, SIGKILLed and started
 * again on the same file and port), the simulator, and workers as child processes (the compiled worker, as deployed).
 *
 *  a. the server SIGKILLed while a runbook waits, restarted: the runbook completes and every setting equals its snapshot;
 *  b. two workers, one SIGKILLed and restarted 4 times at seeded random moments during 20 runbooks on 20 sites:
 *     all complete, every site equals its snapshot (but what a kill left of unknown outcome), no entry added twice;
 *  c. the vendor API failing every request for 60 s: during the revert (the revert completes once the API answers
 *     and says how long it waited; nothing stays tightened) and, at the same time, during another runbook's wait
 *     (its mitigation stays; it reverts only after a cooldown observed attack-free);
 *  d. drift enforce during an attack: the runbook's settings are reported as held by `attack-response-<site>` and
 *     left alone; the runbook reverts exactly afterwards;
 *  e. the server SIGKILLed while expiring blocks are active (one expires while it is down), restarted: each entry is
 *     removed by exactly one DELETE, none added twice.
 *
 * Every test uses sites of its own (a site's coordinator and runbook ids are per site); every process is killed by PID.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { workflowIdFor, type AttackResponseResult, type Change } from '../../api/runbook/contract.ts';
import { toRangeText } from '../../api/catalog/ipv4.ts';
import { auditQuery, stateQuery } from '../../workflows/attackResponse/messages.mts';
import { addBlock, listBlocks } from '../../workflows/blocks/client.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import type { DesiredState } from '../../workflows/drift/driftAudit.mts';
import {
	ATTACK_SOURCES,
	devServerWithDb,
	liveSettings,
	operatorClient,
	plan,
	seededRandom,
	siteIds,
	startSim,
	supervisedWorker,
	uniqueQueue,
	waitFor,
	type DbDevServer,
} from './helpers.mts';
import { startDriftAudit } from '../../workflows/drift/client.mts';

let tmp: string;
let server: DbDevServer;
let connection: Connection;
let client: Client;

before(async () => {
	tmp = mkdtempSync(join(tmpdir(), 'secsvc-chaos-'));
	server = await devServerWithDb(join(tmp, 'temporal.db'));
	connection = await Connection.connect({ address: server.address });
	client = new Client({ connection, namespace: 'default' });
});
after(async () => {
	await connection?.close();
	await server?.stop();
	if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const siteOf = (path: string) => /\/site\/(\d+)\//.exec(path)?.[1];
/** Sites whose runbook has reached the wait (the first is_under_attack poll is the wait's). */
const waitingSites = (sim: { requests(f: { op: string }): { path: string }[] }) =>
	new Set(sim.requests({ op: 'dashboard.isUnderAttack' }).map((r) => siteOf(r.path)));

/** What a stuck workflow is waiting for (diagnostics): its pending activities with attempt and last failure. */
async function pendingOf(handles: WorkflowHandle[]) {
	return Promise.all(
		handles.map(async (h) => {
			const d = await h.describe();
			return {
				id: h.workflowId,
				pending: d.raw.pendingActivities?.map((a) => ({
					type: a.activityType?.name,
					attempt: a.attempt,
					state: a.state,
					failure: a.lastFailure?.message,
				})),
				historyLength: d.historyLength,
			};
		}),
	);
}

/** Ends what a failed test left running, so the next tests' sites and queues stay clean. */
async function terminateRunning(handles: WorkflowHandle[]) {
	for (const h of handles) {
		try {
			if ((await h.describe()).status.name === 'RUNNING') await h.terminate('chaos test cleanup');
		} catch {
			// already closed or never started
		}
	}
}

test('a. Temporal server SIGKILLed while a runbook waits, restarted on the same database file: the runbook completes and reverts', async (t) => {
	const s = await startSim(31);
	const ids = siteIds(s.sim, 21)[20];
	const op = operatorClient(s.url);
	const queue = uniqueQueue('chaos-a');
	const worker = supervisedWorker(server, s.url, queue);
	let h: WorkflowHandle | undefined;
	try {
		const snapshot = await liveSettings(op, ids);
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		h = await startAttackResponse(client, queue, plan(ids, { cooldownSeconds: 2 }));
		const hh = h;
		await waitFor('phase waiting', async () => (await hh.query(stateQuery)).phase === 'waiting', 90_000, 100);
		const mitigated = await liveSettings(op, ids);
		assert.notDeepEqual(mitigated, snapshot, 'the runbook tightened the site');

		await server.kill();
		await sleep(2000); // polls and timers pile up while nothing answers
		await server.start();

		// Same database: the runbook is still there, still waiting, the mitigation untouched.
		const st = await waitFor('the runbook answers after the restart', async () => hh.query(stateQuery), 90_000, 500);
		assert.equal(st.phase, 'waiting');
		assert.deepEqual(await liveSettings(op, ids), mitigated, 'nothing reverted while the server was down');
		s.sim.stopAttack(attack.id);

		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted', JSON.stringify(r.changes.map((c) => [c.what, c.status, c.note])));
		assert.deepEqual(r.conflicts, []);
		assert.deepEqual(await liveSettings(op, ids), snapshot, 'every touched setting equals the snapshot');
		t.diagnostic(
			`worker exited on its own and was started again ${worker.respawns.length} time(s) while the server was down`,
		);
	} finally {
		if (h) await terminateRunning([h]);
		await worker.stop();
		await op.close();
		await s.close();
	}
});

type Live = Awaited<ReturnType<typeof liveSettings>>;
/**
 * A site's expected end: its snapshot, but what the runbook reported as outcome unknown (a kill caught its write in
 * flight; the retry cannot tell its own lost write from someone else's): left as it is (docs/spec-decisions-runbooks.md).
 */
function leftUnknown(snap: Live, final: Live, r: AttackResponseResult): Live {
	const out = { ...snap };
	const field: Record<string, keyof Live> = { detectionMode: 'model', ipAuth: 'ipAuth', switch: 'switches' };
	for (const c of r.changes) {
		const u = c.written?.unknown;
		if (u === undefined) continue;
		if (c.kind !== 'blacklistAdd')
			out[field[c.kind] ?? (c.target.name as keyof Live)] = final[
				field[c.kind] ?? (c.target.name as keyof Live)
			] as never;
		else {
			const texts = (u as string[]).map(toRangeText);
			const kept = (final.blacklist as { start_ip: string; end_ip: string }[]).filter((e) =>
				texts.includes(`${e.start_ip}-${e.end_ip}`),
			);
			out.blacklist = [...out.blacklist, ...kept];
		}
	}
	return out;
}

test('b. two workers, one SIGKILLed and restarted 5 times (during a claim, then at 4 seeded random moments) during 20 runbooks on 20 sites', async (t) => {
	const s = await startSim(37);
	const sites = siteIds(s.sim, 20);
	const op = operatorClient(s.url);
	const queue = uniqueQueue('chaos-b');
	// The victim alone at first (every claim runs on it), the second worker from the first kill on.
	const victim = supervisedWorker(server, s.url, queue);
	let steady: ReturnType<typeof supervisedWorker> | undefined;
	const rand = seededRandom(15);
	let handles: WorkflowHandle[] = [];
	try {
		const snapshots = await Promise.all(sites.map((ids) => liveSettings(op, ids)));
		const attacks = sites.map((ids) =>
			s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES }),
		);
		const t0 = Date.now();
		handles = await Promise.all(
			sites.map((ids) =>
				startAttackResponse(
					client,
					queue,
					plan(ids, { cooldownSeconds: 2, activityTimeoutSeconds: 5, maxDurationSeconds: 600 }),
				),
			),
		);

		// Four kills at seeded moments: the first 0.1–0.4 s after the start (claims at the site coordinators, snapshots),
		// the others 0.3–2.3 s apart; the attacks stop at a seeded moment after the second kill once every runbook
		// waits, so the later kills land in cooldowns and reverts.
		const kills: { atMs: number; waiting: number; requests: number; claimInFlight?: boolean }[] = [];
		// One more kill first, aimed: while a runbook's claim at its site coordinator runs on the victim (a claim may
		// wait for minutes, so a dead worker must not leave it to its start-to-close timeout). When no claim is seen
		// on the victim within 5 s the kill happens anyway and the diagnostics say so.
		const claimOnVictim = async () =>
			(await Promise.all(handles.map((h) => h.describe()))).some((d) =>
				// state 2 = PENDING_ACTIVITY_STATE_STARTED; worker identities are `<pid>@<host>`
				d.raw.pendingActivities?.some(
					(a) =>
						a.activityType?.name === 'coordination.claim' &&
						Number(a.state) === 2 &&
						a.lastWorkerIdentity?.startsWith(`${victim.pid}@`),
				),
			);
		const claimInFlight = await waitFor('a claim running on the victim', claimOnVictim, 10_000, 0).catch(() => false);
		kills.push({
			atMs: Date.now() - t0,
			waiting: waitingSites(s.sim).size,
			requests: s.sim.requests().length,
			claimInFlight,
		});
		await victim.kill();
		steady = supervisedWorker(server, s.url, queue);
		let stopped = false;
		for (let i = 0; i < 4; i++) {
			await sleep(i === 0 ? 100 + Math.floor(rand() * 300) : 300 + Math.floor(rand() * 2000));
			kills.push({ atMs: Date.now() - t0, waiting: waitingSites(s.sim).size, requests: s.sim.requests().length });
			await victim.kill();
			if (i === 1) {
				await waitFor('every runbook waits', async () => waitingSites(s.sim).size === sites.length, 120_000, 100).catch(
					async (e) => {
						throw new Error(
							`${(e as Error).message}; not waiting: ${JSON.stringify(await pendingOf(handles.filter((_, j) => !waitingSites(s.sim).has(sites[j].site_id))))}`,
						);
					},
				);
				await sleep(Math.floor(rand() * 1500));
				for (const a of attacks) s.sim.stopAttack(a.id);
				stopped = true;
			}
		}
		assert.ok(stopped);

		const results = (await Promise.all(handles.map((h) => h.result()))) as AttackResponseResult[];
		const diag = JSON.stringify({ kills, respawns: victim.respawns.length + (steady?.respawns.length ?? 0) });
		for (const r of results) {
			assert.equal(
				r.outcome,
				'reverted',
				`${r.site_id}: ${JSON.stringify(r.changes.map((c) => [c.what, c.status, c.note]))} ${diag}`,
			);
			assert.deepEqual(r.conflicts, [], r.site_id);
		}
		const finals = await Promise.all(sites.map((ids) => liveSettings(op, ids)));
		for (let i = 0; i < sites.length; i++) {
			const r = results.find((x) => x.site_id === sites[i].site_id) as AttackResponseResult;
			const expected = leftUnknown(snapshots[i], finals[i], r);
			assert.deepEqual(finals[i], expected, `site ${sites[i].site_id} equals its snapshot ${diag}`);
		}

		// No entry added twice: every successful add names a distinct (site, domain-port, entry).
		const adds = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.add' })
			.filter((q) => q.method === 'POST' && q.code === 0);
		const keys = adds.map((q) => `${q.path} ${JSON.stringify(q.body)}`);
		assert.equal(new Set(keys).size, keys.length, `no IP-list entry added twice ${diag}`);
		assert.ok(adds.length >= sites.length, `every site got its blacklist entries (${adds.length} adds)`);
		t.diagnostic(`kills (ms after start, runbooks waiting, API requests so far): ${diag}`);
	} finally {
		await terminateRunning(handles);
		await victim.stop();
		await steady?.stop();
		await op.close();
		await s.close();
	}
});

test(
	"c. the vendor API down for 60 s during one runbook's revert and another's wait: the revert waits it out, the wait keeps the mitigation",
	{ timeout: 200_000 },
	async () => {
		const s = await startSim(41);
		const all = siteIds(s.sim, 23);
		const R = all[21]; // reverting when the outage starts
		const W = all[22]; // waiting (attack still on) when the outage starts
		const op = operatorClient(s.url);
		const queue = uniqueQueue('chaos-c');
		const worker = supervisedWorker(server, s.url, queue);
		const control = (method: string, path: string, body?: unknown) =>
			fetch(`${s.url}/__sim${path}`, {
				method,
				headers: body ? { 'content-type': 'application/json' } : {},
				body: body ? JSON.stringify(body) : undefined,
			}).then(async (r) => {
				assert.ok(r.ok, `control ${method} ${path}: HTTP ${r.status}`);
				return r.json();
			});
		const cooldownSeconds = 3;
		let hR: WorkflowHandle | undefined;
		let hW: WorkflowHandle | undefined;
		try {
			const snapR = await liveSettings(op, R);
			const snapW = await liveSettings(op, W);
			const attackR = s.sim.startAttack({ site_id: R.site_id, duration: 0, sources: ATTACK_SOURCES });
			const attackW = s.sim.startAttack({ site_id: W.site_id, duration: 0, sources: ATTACK_SOURCES });
			const opts = { cooldownSeconds, pollSeconds: 1, activityTimeoutSeconds: 5, maxDurationSeconds: 1800 };
			hR = await startAttackResponse(client, queue, plan(R, opts));
			hW = await startAttackResponse(client, queue, plan(W, opts));
			await waitFor(
				'both runbooks wait',
				async () => waitingSites(s.sim).has(R.site_id) && waitingSites(s.sim).has(W.site_id),
				90_000,
				100,
			);
			const mitigatedW = await liveSettings(op, W);
			assert.notDeepEqual(mitigatedW, snapW);

			// R's revert: its blacklist removal (a write only the revert sends) is held for 3 s; the outage starts while
			// it is in flight, so the rest of the revert meets a dead API.
			s.sim.addFault({ op: 'applicationProtection.ipBlacklist.remove', kind: 'delay', delayMs: 3000, count: 1 });
			s.sim.stopAttack(attackR.id);
			await waitFor(
				'R reverting (blacklist removal in flight)',
				async () =>
					s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' }).some((q) => siteOf(q.path) === R.site_id),
				60_000,
				20,
			);
			await control('POST', '/faults', { op: '*', kind: 'http5xx', count: 1_000_000_000 });
			const outageStart = Date.now();
			const seqAtOutage = s.sim.requests().at(-1)?.seq ?? 0;

			await sleep(30_000);
			const midW = await hW.query(stateQuery);
			assert.equal(midW.phase, 'waiting', 'W keeps waiting while blind');
			assert.ok(
				midW.blindSince && Date.now() - Date.parse(midW.blindSince) >= 20_000,
				`W's state says since when it is blind: ${JSON.stringify(midW)}`,
			);
			assert.equal((await hR.query(stateQuery)).phase, 'reverting', 'R is still reverting, not given up');
			await sleep(Math.max(0, 60_000 - (Date.now() - outageStart)));
			await control('DELETE', '/faults');
			const outageEnd = Date.now();

			// W sent no write during the outage: it never tried to disarm while blind.
			const wWrites = s.sim
				.requests({ since: seqAtOutage })
				.filter((q) => q.method !== 'GET' && siteOf(q.path) === W.site_id);
			assert.deepEqual(
				wWrites.map((q) => q.opId),
				[],
				'no revert attempted while blind',
			);

			// R completes once the API answers; it says how long it waited; nothing stays tightened.
			const rR = (await hR.result()) as AttackResponseResult;
			assert.equal(rR.outcome, 'reverted', JSON.stringify(rR.changes.map((c: Change) => [c.what, c.status, c.note])));
			assert.ok(
				rR.changes.every((c) => c.status === 'restored' || c.status === 'unchanged'),
				JSON.stringify(rR.changes.map((c) => [c.what, c.status])),
			);
			assert.ok(
				typeof rR.waitedForApiSeconds === 'number' &&
					rR.waitedForApiSeconds >= 50 &&
					rR.waitedForApiSeconds <= (Date.now() - outageStart) / 1000 + 5,
				`waitedForApiSeconds ${rR.waitedForApiSeconds} (outage ${((outageEnd - outageStart) / 1000).toFixed(0)} s)`,
			);
			const waitedEntry = rR.audit.find((e) => e.step === 'reverting' && /waited \d+s for the API/.test(e.why));
			assert.ok(
				waitedEntry,
				`the revert's audit says it waited for the API: ${JSON.stringify(rR.audit.filter((e) => e.step === 'reverting'))}`,
			);
			assert.deepEqual(await liveSettings(op, R), snapR, 'R: every setting equals the snapshot');

			// W: answering again, still waiting, the mitigation exactly as it was; its audit says how long it was blind.
			const afterW = await waitFor(
				'W sees the API again',
				async () => {
					const st = await hW!.query(stateQuery);
					return st.blindSince === undefined ? st : undefined;
				},
				30_000,
				500,
			);
			assert.equal(afterW.phase, 'waiting');
			assert.ok(afterW.blindSeconds >= 50, `W's state says how long it was blind: ${afterW.blindSeconds}s`);
			assert.deepEqual(await liveSettings(op, W), mitigatedW, 'W: the mitigation stayed in place through the outage');
			const wAudit = await hW.query(auditQuery);
			assert.ok(
				wAudit.some((e) => e.step === 'waiting' && /blind/.test(e.what)),
				`W: the blind period is in the audit: ${JSON.stringify(wAudit.map((e) => e.what))}`,
			);

			// W reverts only after a cooldown observed attack-free.
			const stopAt = s.sim.nowMs();
			s.sim.stopAttack(attackW.id);
			const rW = (await hW.result()) as AttackResponseResult;
			assert.equal(rW.outcome, 'reverted');
			assert.ok(rW.blindSeconds >= 50, `W's result says how long it was blind: ${rW.blindSeconds}s`);
			const firstRevertWrite = s.sim
				.requests({ since: seqAtOutage })
				.find((q) => q.method !== 'GET' && siteOf(q.path) === W.site_id && q.code === 0);
			assert.ok(
				firstRevertWrite && firstRevertWrite.time >= stopAt + cooldownSeconds * 1000,
				`W's first revert write ${firstRevertWrite?.time} vs attack stop ${stopAt} + cooldown`,
			);
			assert.deepEqual(await liveSettings(op, W), snapW, 'W: every setting equals the snapshot');
		} finally {
			s.sim.faults = [];
			await terminateRunning([hR, hW].filter((h): h is WorkflowHandle => h !== undefined));
			await worker.stop();
			await op.close();
			await s.close();
		}
	},
);

test('d. drift enforce during an attack: the runbook\'s settings are held, not "fixed"; the runbook reverts exactly afterwards', async () => {
	const s = await startSim(43);
	const ids = siteIds(s.sim, 24)[23];
	const op = operatorClient(s.url);
	const queue = uniqueQueue('chaos-d');
	const worker = supervisedWorker(server, s.url, queue);
	let h: WorkflowHandle | undefined;
	try {
		const snapshot = await liveSettings(op, ids);
		const pAuth = findSwitch(snapshot.switches, 'p_auth');
		assert.ok(pAuth, 'the site has a p_auth switch');
		// The desired state is the site's own baseline (what a scheduled drift audit would hold it to), in the shape
		// of examples/plans/desired-state.json, plus one real drift the runbook does not touch (a whitelist entry).
		const desired: DesiredState = {
			site_id: ids.site_id,
			customer_id: ids.customer_id,
			detection: {
				model: Number(snapshot.model),
				items: { tcp_syn: pick(snapshot.tcp_syn, ['is_enabled', 'low_pps', 'high_pps']) },
			},
			domain_ports: {
				[ids.domain_port_id]: { switches: { p_auth: Number(pAuth.enable) }, whitelistIncludes: ['192.0.2.10'] },
			},
		};
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		h = await startAttackResponse(client, queue, plan(ids, { cooldownSeconds: 2 }));
		const hh = h;
		await waitFor('phase waiting', async () => (await hh.query(stateQuery)).phase === 'waiting', 90_000, 100);
		const mitigated = await liveSettings(op, ids);

		const drift = (enforce: boolean) => startDriftAudit(client, queue, { desired, enforce }).then((h) => h.result());
		const enforced = await drift(true);
		const by = workflowIdFor(ids.site_id);
		for (const setting of ['detection.model', 'detection.tcp_syn', 'switch.p_auth']) {
			const d = enforced.held.find((x) => x.setting === setting);
			assert.ok(d, `${setting} is reported as held: ${JSON.stringify(enforced)}`);
			assert.equal(d.held.by, by, `${setting} is held by ${by}: ${JSON.stringify(d)}`);
			assert.ok(!Number.isNaN(Date.parse(d.held.since)), `${setting}: held since when: ${JSON.stringify(d)}`);
			assert.equal(d.enforced, undefined, `${setting} is left alone`);
			assert.ok(!enforced.drifts.some((x) => x.setting === setting), `${setting} is not drift`);
		}
		assert.deepEqual(
			enforced.drifts.map((x) => [x.setting, x.enforced]),
			[['whitelistIncludes', 'fixed']],
			'a setting nobody holds is still enforced',
		);

		assert.deepEqual(await liveSettings(op, ids), mitigated, 'the mitigation stays');
		const st = await h.query(stateQuery);
		assert.equal(st.phase, 'waiting');
		assert.equal(st.conflicts, 0);

		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(r.conflicts, [], 'drift wrote nothing the runbook holds');
		assert.ok(
			r.changes.every((c) => c.status === 'restored' || c.status === 'unchanged'),
			JSON.stringify(r.changes.map((c) => [c.what, c.status])),
		);
		assert.deepEqual(await liveSettings(op, ids), snapshot, 'reverted exactly');

		// Once the runbook is done nothing is held, and the site is at its desired state.
		const report = await drift(false);
		assert.deepEqual([report.drifts, report.held], [[], []], JSON.stringify(report));
	} finally {
		if (h) await terminateRunning([h]);
		await worker.stop();
		await op.close();
		await s.close();
	}
});

function pick(o: unknown, keys: string[]): Record<string, string | number> {
	const src = o as Record<string, string | number>;
	return Object.fromEntries(keys.filter((k) => src[k] !== undefined).map((k) => [k, src[k]]));
}

function findSwitch(tree: unknown, name: string): { enable: number } | undefined {
	if (!tree || typeof tree !== 'object') return undefined;
	const t = tree as Record<string, unknown>;
	if (t.name === name && 'enable' in t) return t as { enable: number };
	for (const v of Object.values(t)) {
		const f = typeof v === 'object' ? findSwitch(v, name) : undefined;
		if (f) return f;
	}
	return undefined;
}

test('e. Temporal server SIGKILLed while expiring blocks are active, restarted: each expiry removes exactly its entry, once', async () => {
	const s = await startSim(37);
	const ids = siteIds(s.sim, 26)[25];
	const op = operatorClient(s.url);
	const queue = uniqueQueue('chaos-e');
	const worker = supervisedWorker(server, s.url, queue);
	const entries = ['198.51.100.7', '198.51.100.8'];
	const blacklist = async () => {
		const r = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
		})) as {
			p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string }[] } };
		};
		return r.p_info.ipv4.black_soc.map((e) => String(e.ip ?? e.start_ip));
	};
	try {
		// The short block expires while the server is down, the long one after it is back. The short one is added last
		// and the server killed as soon as its add returns: a fixed 6 s counted from the FIRST add (as before) ran out
		// under load before the second add had returned (its durable Update took longer), so the check saw one entry.
		const request = (entry: string, seconds: number) => ({
			entry,
			seconds,
			by: 'alice@soc',
			reason: 'chaos',
			via: 'cli' as const,
		});
		await addBlock(client, queue, ids.site_id, ids.domain_port_id, request(entries[1], 20));
		const short = await addBlock(client, queue, ids.site_id, ids.domain_port_id, request(entries[0], 6));
		await server.kill();
		// both were active when the server died: two adds, no removal yet (the simulator's log; no read that takes time)
		const added = s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((r) => r.status === 200);
		assert.equal(added.length, 2, 'both blocks added');
		const removed = s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' }).length;
		assert.equal(removed, 0, `no expiry before the kill (the 6 s block expires at ${short.expiresAt})`);
		await sleep(Math.max(0, Date.parse(short.expiresAt) - Date.now()) + 1000); // its expiry passes while nothing answers
		await server.start();

		await waitFor('both blocks removed after the restart', async () => (await blacklist()).length === 0, 90_000, 250);
		const posts = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.add' })
			.filter((r) => r.method === 'POST' && r.status === 200);
		const deletes = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.remove' })
			.filter((r) => r.method === 'DELETE' && r.status === 200);
		assert.equal(posts.length, 2, 'one add per block');
		const named = deletes
			.flatMap((r) =>
				String(r.query.ip_black_list ?? '')
					.split(',')
					.filter(Boolean),
			)
			.map((e) => e.split('-')[0]);
		assert.deepEqual(named.sort(), entries, 'each entry named by exactly one successful DELETE');
		const ended = await listBlocks(client, ids.site_id, ids.domain_port_id).catch(() => []);
		assert.ok(
			ended.every((b) => b.state !== 'active'),
			JSON.stringify(ended.map((b) => [b.range, b.state])),
		);
	} finally {
		for (const id of [`blocks-${ids.site_id}-${ids.domain_port_id}`, `site-${ids.site_id}`]) {
			const h = client.workflow.getHandle(id);
			await waitFor(`${id} closed`, async () => (await h.describe()).status.name !== 'RUNNING', 30_000, 250).catch(() =>
				terminateRunning([h]),
			);
		}
		await worker.stop();
		await op.close();
		await s.close();
	}
});

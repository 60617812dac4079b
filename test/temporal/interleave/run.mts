/**
 * Runs one schedule on its own site: the attack and the runbook, each step at its anchor, then waits until every
 * actor is done (runbook result, blocks expired, drift finished) and checks the invariant from the simulator's log
 * and the site's final settings.
 */
import type { Client } from '../../../api/client.ts';
import type { LogEntry } from '../../../simulator/index.mts';
import { abort, decide, extendCooldown, startAttackResponse } from '../../../worker/src/temporal/runbooks.mts';
import { addBlock } from '../../../worker/src/temporal/blocks.mts';
import { blocksShardId } from '../../../api/blockShards.ts';
import { WORKFLOW_TYPE, type AttackResponseResult } from '../../../api/runbook/contract.ts';
import { stateQuery } from '../../../workflows/attackResponse/messages.mts';
import type { driftAudit } from '../../../workflows/drift/driftAudit.mts';
import { plan, type Ids } from '../helpers.mts';
import { actText, IP_AUTH_VALUES, SOURCES, type Act, type Anchor, type Schedule } from './schedule.mts';
import { check, settingValues, writesOf, type Values, type Violation } from './invariant.mts';
import type { World } from './world.mts';

export interface Outcome {
	schedule: Schedule;
	site: string;
	violations: Violation[];
	/** A step or the runbook failed in a way the test does not expect (not an invariant violation). */
	errors: string[];
	/** What happened, in order (steps as run, the runbook's outcome). */
	trace: string[];
	/** The site's writes as the invariant read them: seq, caller, op. */
	writes: string[];
	ms: number;
	kills: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `p`, or `undefined` after `ms` (the timer is cleared either way: nothing keeps the process alive). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
	let timer: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
	} finally {
		clearTimeout(timer);
	}
}

export async function readValues(c: Client, ids: Ids): Promise<Values> {
	const op = { customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0' };
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const [pol, bl, ipAuth, sw] = await Promise.all([
		c.call('detection.getPolicy', op),
		c.call('applicationProtection.ipBlacklist.get', dp),
		c.call('applicationProtection.authIp.get', dp),
		c.call('applicationProtection.switch.list', dp),
	]);
	const p = pol as unknown as Record<string, Record<string, Record<string, unknown>>>;
	return settingValues(ids.domain_port_id, {
		model: (pol as { model: unknown }).model,
		leaves: { tcp_syn: p.tcp.tcp_syn, total_traffic: p.total_traffic.total_traffic },
		blacklist: (bl as { p_info: { ipv4: { black_soc: Record<string, unknown>[] } } }).p_info.ipv4.black_soc,
		ipAuth: ipAuth as unknown as Record<string, unknown>,
		pAuth: (sw as unknown as Record<string, { enable: unknown }>).p_auth.enable,
	});
}

/** The log entries after `from` (the log is in seq order), of this site. */
function siteLog(w: World, from: number, site: string): LogEntry[] {
	const log = w.sim.sim.log;
	let lo = 0;
	let hi = log.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (log[mid].seq <= from) lo = mid + 1;
		else hi = mid;
	}
	const mark = `/site/${site}/`;
	return log.slice(lo).filter((e) => e.path.includes(mark));
}

export async function runSchedule(w: World, s: Schedule, ids: Ids): Promise<Outcome> {
	const t0 = Date.now();
	const trace: string[] = [];
	const errors: string[] = [];
	const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
	const from = w.sim.sim.log.at(-1)?.seq ?? 0;
	const initial = await readValues(w.n8n, ids);
	const pending: Promise<unknown>[] = [];
	let blocks = false;
	let kills = 0;
	const h = { current: undefined as Awaited<ReturnType<typeof startAttackResponse>> | undefined };
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };

	const write = async (a: Act & { actor: 'n8n' | 'console' }): Promise<void> => {
		const calls: [string, Record<string, unknown>][] = [];
		if (a.op === 'blockAttack')
			for (const e of SOURCES) calls.push(['applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: e }]);
		else if (a.op === 'blAdd') calls.push(['applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: a.entry }]);
		else if (a.op === 'blRemove')
			calls.push(['applicationProtection.ipBlacklist.remove', { ...dp, ip_black_list: [a.entry] }]);
		else if (a.op === 'ipAuth') calls.push(['applicationProtection.authIp.set', { ...dp, ...IP_AUTH_VALUES[a.value] }]);
		else if (a.op === 'switch')
			calls.push(['applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: a.enable }]);
		else
			calls.push([
				'detection.setMode',
				{ customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0', model: String(a.model) },
			]);
		for (const [op, params] of calls) {
			if (a.actor === 'n8n') await w.n8n.call(op, params);
			else {
				const r = await fetch(`${w.sim.url}/__sim/console`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ op, params }),
				});
				const j = (await r.json()) as { code?: number; msg?: string; error?: string };
				if (j.code !== 0) throw new Error(`console ${op}: ${j.error ?? j.msg}`);
			}
		}
	};

	const perform = async (a: Act): Promise<void> => {
		switch (a.actor) {
			case 'n8n':
			case 'console':
				return write(a);
			case 'block':
				blocks = true;
				try {
					await addBlock(w.client, w.queueP, ids.site_id, ids.domain_port_id, {
						entry: a.entry,
						seconds: a.seconds,
						by: 'soc-carol',
						reason: 'interleaving test',
					});
				} catch (e) {
					trace.push(`${at()}   block refused: ${(e as Error).message.slice(0, 160)}`);
				}
				return;
			case 'drift': {
				const desired = {
					site_id: ids.site_id,
					customer_id: ids.customer_id,
					...(a.model !== undefined ? { detection: { model: a.model } } : {}),
					domain_ports: {
						[ids.domain_port_id]: {
							...(a.ipAuth !== undefined ? { ipAuth: IP_AUTH_VALUES[a.ipAuth] } : {}),
							...(a.pAuth !== undefined ? { switches: { p_auth: a.pAuth } } : {}),
						},
					},
				};
				const d = await w.client.workflow.start<typeof driftAudit>(WORKFLOW_TYPE.driftAudit, {
					taskQueue: w.queueP,
					workflowId: `drift-audit-${ids.site_id}-${s.seed}-${trace.length}`,
					args: [{ desired: desired as never, enforce: true }],
				});
				pending.push(d.result().catch((e) => errors.push(`drift: ${(e as Error).message}`)));
				return;
			}
			case 'abort':
				if (h.current) await abort(w.client, ids.site_id, 'oncall-bob', 'interleaving test').catch(() => undefined);
				return;
			case 'extend':
				if (h.current) await extendCooldown(w.client, ids.site_id, a.seconds, 'oncall-bob').catch(() => undefined);
				return;
			case 'kill':
				if (await w.kill()) kills++;
				else trace.push(`${at()}   (kill skipped: another kill less than the gap ago)`);
				return;
		}
	};

	const runAnchor = async (anchor: Anchor) => {
		for (const st of s.steps.filter((x) => x.at === anchor)) {
			await sleep(st.delayMs);
			trace.push(`${at()} ${anchor} ${actText(st.act)}`);
			try {
				await perform(st.act);
			} catch (e) {
				// a refusal of the service (e.g. removing an entry that is not listed) is part of the interleaving
				trace.push(`${at()}   refused: ${(e as Error).message.slice(0, 160)}`);
			}
		}
	};

	// The gate: the runbook's phase (a query, every 400 ms: the gate stays open until the decision).
	const phaseIn = async (phases: string[], timeoutMs = 60_000) => {
		const end = Date.now() + timeoutMs;
		while (Date.now() < end) {
			try {
				const st = await h.current?.query(stateQuery);
				if (st && phases.includes(st.phase)) return st.phase;
			} catch {
				// a query while the worker restarts: ask again
			}
			await sleep(400);
		}
		return 'timeout';
	};
	// The wait: the runbook's first attack poll on this site in the simulator's log (no Temporal call), or its end.
	let cursor = w.sim.sim.log.length;
	const waiting = async (timeoutMs = 90_000) => {
		const end = Date.now() + timeoutMs;
		const mark = `/site/${ids.site_id}/`;
		for (let i = 0; Date.now() < end; i++) {
			const log = w.sim.sim.log;
			for (; cursor < log.length; cursor++) {
				const e = log[cursor];
				if (e.opId === 'dashboard.isUnderAttack' && e.caller === 'app' && e.path.includes(mark)) return 'waiting';
			}
			if (i % 5 === 4 && (await h.current?.describe())?.status.name !== 'RUNNING') return 'ended';
			await sleep(200);
		}
		return 'timeout';
	};

	const sources = SOURCES.map((ip) => ({ ip }));
	let result: AttackResponseResult | undefined;
	try {
		await runAnchor('pre');
		const attack = w.sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources });
		const p = plan(ids, {
			approval: { required: s.gate !== 'none', timeoutSeconds: 120, onTimeout: 'reject', approvers: [] },
			blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0, protectedRanges: [] },
			cooldownSeconds: s.cooldownSeconds,
			execution: { ...s.execution, blacklistConcurrency: 1, continueAsNewAfterEvents: 2000 },
			activityTimeoutSeconds: 5,
			maxDurationSeconds: 180,
		});
		h.current = await startAttackResponse(w.client, w.queueR, p);
		trace.push(`${at()} runbook started (gate ${s.gate})`);
		await runAnchor('start');
		if (s.gate !== 'none') {
			const gatePhase = await phaseIn(['awaiting-approval', 'done']);
			trace.push(`${at()} phase ${gatePhase}`);
			await runAnchor('gate');
			await decide(w.client, ids.site_id, {
				approved: s.gate === 'approve',
				by: 'oncall-alice',
				reason: s.gate === 'approve' ? undefined : 'interleaving test',
				via: 'api',
			}).catch((e) => trace.push(`${at()}   decision refused: ${(e as Error).message.slice(0, 120)}`));
			trace.push(`${at()} ${s.gate}`);
		}
		const waitPhase = await waiting();
		trace.push(`${at()} ${waitPhase}`);
		await runAnchor('waiting');
		w.sim.sim.stopAttack(attack.id);
		trace.push(`${at()} attack stopped`);
		await runAnchor('stopped');
		result = (await within(h.current.result(), 150_000)) as AttackResponseResult | undefined;
		if (!result) errors.push('the runbook did not finish within 150 s');
		else
			trace.push(`${at()} runbook ${result.outcome}: ${result.changes.map((c) => `${c.id} ${c.status}`).join(', ')}`);
		if (blocks)
			pending.push(
				w.client.workflow
					.getHandle(blocksShardId(ids.site_id, ids.domain_port_id, 0))
					.result()
					.catch((e) => errors.push(`blocks: ${(e as Error).message}`)),
			);
		if (!(await within(Promise.all(pending), 120_000))) errors.push('blocks/drift still running after 120 s');
	} catch (e) {
		errors.push(`schedule: ${(e as Error).message}`);
	}
	const killed = w.kills.filter((k) => k >= t0).map((k) => `+${((k - t0) / 1000).toFixed(1)}s`);
	if (killed.length) trace.push(`(the runbooks' worker was SIGKILLed during this schedule at ${killed.join(', ')})`);
	const final = await readValues(w.n8n, ids);
	const log = siteLog(w, from, ids.site_id);
	const writes = log.flatMap((e) => writesOf(e, w.actorOf));
	return {
		schedule: s,
		site: ids.site_id,
		violations: check(initial, final, writes),
		errors,
		trace,
		writes: log
			.filter((e) => e.method !== 'GET' && e.code === 0 && e.caller)
			.map(
				(e) =>
					`#${e.seq} ${w.actorOf(e.caller as string, e.opId?.includes('Blacklist') ? 'bl.' : '')} ${e.opId} ${JSON.stringify(e.body ?? e.query)}`,
			),
		ms: Date.now() - t0,
		kills,
	};
}

import {
	ApplicationFailure,
	CancellationScope,
	condition,
	isCancellation,
	proxyActivities,
	proxyLocalActivities,
	setHandler,
} from '@temporalio/workflow';
import {
	abortSignal,
	approveSignal,
	auditQuery,
	changesQuery,
	extendCooldownSignal,
	planQuery,
	resultQuery,
	stateQuery,
	type AttackResponseInput,
	type AttackResponseResult,
	type AuditEntry,
	type Change,
	type Phase,
	type RunbookState,
} from './defs.mts';
import { parsePlanInWorker } from './parsePlan.mts';
import { ITEM_GROUP, ITEM_TYPE, type Plan } from './planShared.mts';
import { blacklistCandidates, entryRange, formatRange, parseAll, type ListEntry, type Range } from './ranges.mts';
import { sameThreshold, scaleThreshold } from './thresholds.mts';

/**
 * Attack response runbook: snapshot → (approval) → tighten detection → blacklist top sources → IP-auth rate
 * limiting and switches → wait out the attack (cooldown) → revert exactly what this runbook changed.
 * Every API call goes through an activity named by its catalog operation id; credentials live in the worker.
 */

type Params = Record<string, unknown>;
type Act = (params: Params) => Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function activities(timeoutSeconds: number, maximumAttempts: number, local = false): Record<string, Act> {
	const options = {
		startToCloseTimeout: `${timeoutSeconds}s` as const,
		retry: { initialInterval: '500ms' as const, backoffCoefficient: 2, maximumInterval: '10s' as const, maximumAttempts },
	};
	return local ? proxyLocalActivities<Record<string, Act>>(options) : proxyActivities<Record<string, Act>>(options);
}

/** Runs `fns` `limit` at a time, waits for ALL of them (nothing left in flight), rethrows the first failure. */
async function settleAll(fns: (() => Promise<unknown>)[], limit: number): Promise<void> {
	let first: { e: unknown } | undefined;
	for (let i = 0; i < fns.length; i += limit) {
		const rs = await Promise.allSettled(fns.slice(i, i + limit).map((f) => f()));
		for (const r of rs) if (r.status === 'rejected') first ??= { e: r.reason };
		if (first) break;
	}
	if (first) throw first.e;
}

const iso = (ms: number) => new Date(ms).toISOString();

export async function attackResponse(input: AttackResponseInput): Promise<AttackResponseResult> {
	const started = Date.now();
	const dryRun = Boolean(input?.dryRun);
	const audit: AuditEntry[] = [];
	const changes: Change[] = [];
	const skipped: { source: string; reason: string }[] = [];
	const state: RunbookState = {
		phase: 'validating',
		dryRun,
		startedAt: iso(started),
		aborted: false,
		extraCooldownSeconds: 0,
		changes: 0,
		conflicts: 0,
	};
	let lastResult: AttackResponseResult | undefined;
	let approval: { approved: boolean; by?: string; reason?: string } | undefined;
	const log = (step: AuditEntry['step'], what: string, why: string, extra: Partial<AuditEntry> = {}) =>
		audit.push({ at: iso(Date.now()), step, what, why, ...extra });
	const phase = (p: Phase) => {
		state.phase = p;
	};

	setHandler(stateQuery, () => ({ ...state, changes: changes.length, conflicts: changes.filter((c) => c.status === 'conflict').length }));
	setHandler(planQuery, () => input?.plan);
	setHandler(changesQuery, () => changes);
	setHandler(resultQuery, () => lastResult);
	setHandler(auditQuery, () => audit);
	setHandler(approveSignal, (a) => {
		if (approval === undefined) approval = { approved: Boolean(a?.approved), by: a?.by, reason: a?.reason };
		log('signal', a?.approved ? 'approve' : 'reject', a?.reason ?? 'operator decision', { result: a?.by });
	});
	setHandler(abortSignal, (a) => {
		state.aborted = true;
		state.abortReason = a?.reason ?? 'abort signal';
		log('signal', 'abort', state.abortReason, { result: a?.by });
	});
	setHandler(extendCooldownSignal, (a) => {
		const s = Math.max(0, Math.floor(Number(a?.seconds) || 0));
		state.extraCooldownSeconds += s;
		log('signal', `extend cooldown by ${s}s`, 'operator request', { result: a?.by });
	});

	const plan: Plan = await parsePlanInWorker(input?.plan);
	const site = plan.site_id;
	const op = { customer_id: plan.customer_id, site_id: site, network_id: plan.network_id, host_id: plan.host_id };
	const dpParams = (dp: string) => ({ site_id: site, domain_port_id: dp });
	const ex = plan.execution;
	const acts = activities(plan.activityTimeoutSeconds, 8);
	// Reads (snapshot, event lookup, polls) as local activities unless the plan says none.
	const readActs = ex.localActivities === 'none' ? acts : activities(plan.activityTimeoutSeconds, 8, true);
	const localWrites = ex.localActivities === 'all';
	// Reverts try harder: they are what leaves the site as it was. Their writes are always regular activities, so
	// each live read before a write is recorded in history before the write is sent.
	const revertActs = activities(plan.activityTimeoutSeconds, 30);
	const revertReads = ex.localActivities === 'none' ? revertActs : activities(plan.activityTimeoutSeconds, 30, true);
	// Independent calls at once (plan.execution.parallel) or one after another; results are used in a fixed order.
	const all = <T,>(fns: (() => Promise<T>)[]): Promise<T[]> =>
		ex.parallel ? Promise.all(fns.map((f) => f())) : fns.reduce<Promise<T[]>>(async (acc, f) => [...(await acc), await f()], Promise.resolve([]));

	const result = (outcome: AttackResponseResult['outcome'], extra: Partial<AttackResponseResult> = {}): AttackResponseResult => ({
		outcome,
		site_id: site,
		eventId: state.eventId,
		changes,
		conflicts: changes.filter((c) => c.status === 'conflict'),
		skipped,
		audit,
		...extra,
	});

	// ------------------------------------------------------------------ snapshot
	phase('snapshot');
	const snap: {
		detection?: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
		dp: Record<string, { black?: ListEntry[]; white?: ListEntry[]; ipAuth?: Params; switches?: Params }>;
	} = { dp: {} };
	const needDetection = plan.detection.rapidMode || plan.detection.thresholds.length > 0;
	// Every snapshot read and the event lookup are independent: one round (plan.execution.parallel).
	const reads: (() => Promise<void>)[] = [];
	if (needDetection) reads.push(async () => void (snap.detection = await readActs['detection.getPolicy'](op)));
	for (const dp of plan.domain_ports) {
		const s: (typeof snap.dp)[string] = {};
		snap.dp[dp] = s;
		if (plan.blacklist.enabled) {
			reads.push(async () => void (s.black = (await readActs['applicationProtection.ipBlacklist.get'](dpParams(dp)))?.p_info?.ipv4?.black_soc ?? []));
			reads.push(async () => void (s.white = (await readActs['applicationProtection.ipWhitelist.get'](dpParams(dp)))?.p_info?.ipv4?.white_soc ?? []));
		}
		if (plan.ipAuth) reads.push(async () => void (s.ipAuth = await readActs['applicationProtection.authIp.get'](dpParams(dp))));
		if (plan.switches.length) reads.push(async () => void (s.switches = await readActs['applicationProtection.switch.list'](dpParams(dp))));
	}
	let evs: { events?: unknown[] } | undefined;
	const eventQuery = plan.event_id ? { site_id: site, alert_id: plan.event_id, status: 'all' } : { site_id: site, status: 'ongoing', num: '50' };
	reads.push(async () => void (evs = await readActs['dashboard.ddosEvents'](eventQuery)));
	await all(reads);
	log('snapshot', 'snapshot of every setting the plan touches', 'revert restores exactly these values', {
		after: { detectionModel: snap.detection?.model, domainPorts: plan.domain_ports },
	});

	// ------------------------------------------------------------------ event and sources
	let eventId = plan.event_id;
	if (!eventId) {
		const ongoing = ((evs?.events ?? []) as { alert_id: string; status: number; start_time: number }[])
			.filter((e) => e.status === 1)
			.sort((a, b) => b.start_time - a.start_time);
		if (ongoing[0]) {
			eventId = ongoing[0].alert_id;
			state.eventStart = ongoing[0].start_time;
		}
	} else {
		const ev = ((evs?.events ?? []) as { alert_id: string; start_time: number }[]).find((e) => e.alert_id === eventId);
		if (ev) state.eventStart = ev.start_time;
	}
	state.eventId = eventId;
	log('snapshot', eventId ? `event ${eventId}` : 'no ongoing event found', eventId ? 'the runbook acts on this event' : 'blacklisting is skipped without an event');

	let sources: string[] = [];
	if (plan.blacklist.enabled && eventId && plan.domain_ports.length) {
		const detail = await readActs['dashboard.eventDetail']({ event_id: eventId, module: 'threat_map' });
		// The module's content may come wrapped ({threat_map: {bps, pps}}) or bare ({bps, pps}); accept both.
		const tm = detail?.threat_map ?? detail;
		const items = ((tm?.[plan.blacklist.metric] ?? []) as { ip: string; percent: number; size: string }[])
			.filter((i) => (i.percent ?? 0) >= plan.blacklist.minPercent)
			.sort((a, b) => (b.percent ?? 0) - (a.percent ?? 0) || Number(b.size) - Number(a.size));
		sources = items.slice(0, plan.blacklist.topN).map((i) => i.ip);
	}

	// ------------------------------------------------------------------ planned changes
	phase('planning');
	const protectedRanges = parseAll(plan.blacklist.protectedRanges).ranges;
	const add = (c: Omit<Change, 'status'>) => changes.push({ ...c, status: 'planned' });
	if (snap.detection && plan.detection.rapidMode && Number(snap.detection.model) !== 1)
		add({ id: 'detection.mode', kind: 'detectionMode', what: 'detection mode', target: op, before: snap.detection.model, after: 1, why: 'rapid mode detects the attack faster' });
	for (const t of plan.detection.thresholds) {
		const leaf = snap.detection?.[ITEM_GROUP[t.name]]?.[t.name] as Record<string, unknown> | undefined;
		if (!leaf) {
			log('planning', `detection item ${t.name}`, 'not present in the live policy; left alone');
			continue;
		}
		const after: Record<string, unknown> = { ...leaf };
		for (const f of ['low_pps', 'high_pps', 'low_bps', 'high_bps'] as const) {
			if (leaf[f] === undefined) continue;
			if (t[f]) after[f] = t[f];
			else if (t.factor !== undefined) after[f] = scaleThreshold(String(leaf[f]), t.factor);
		}
		after.is_enabled = 1;
		if (!sameLeaf(leaf, after))
			add({ id: `detection.policy.${t.name}`, kind: 'detectionPolicy', what: `detection thresholds of ${t.name}`, target: { ...op, name: t.name, type: ITEM_TYPE[t.name] }, before: pickLeaf(leaf), after: pickLeaf(after), why: 'lower thresholds so the attack traffic is caught' });
	}
	for (const dp of plan.domain_ports) {
		const s = snap.dp[dp];
		if (plan.blacklist.enabled && sources.length) {
			const toRanges = (l: ListEntry[] | undefined) => (l ?? []).map(entryRange).filter((r): r is Range => r !== undefined);
			const cand = blacklistCandidates({ sources, whitelist: toRanges(s.white), protectedRanges, alreadyListed: toRanges(s.black) });
			for (const sk of cand.skipped) skipped.push({ ...sk, source: `${dp}:${sk.source}` });
			if (cand.add.length)
				add({ id: `blacklist.${dp}`, kind: 'blacklistAdd', what: `IP blacklist of ${dp}`, target: dpParams(dp), before: [], after: cand.add.map(formatRange), why: `top ${plan.blacklist.topN} attacking sources of event ${eventId} (${plan.blacklist.metric}), aggregated, minus whitelist and protected ranges` });
		}
		if (plan.ipAuth && s.ipAuth) {
			const want = ipAuthBody(plan.ipAuth as Params);
			const have = ipAuthBody(s.ipAuth);
			if (!sameJson(want, have))
				add({ id: `ipAuth.${dp}`, kind: 'ipAuth', what: `IP authentication of ${dp}`, target: dpParams(dp), before: have, after: want, why: 'rate-limit sources per IP during the attack' });
		}
		for (const sw of plan.switches) {
			const node = findSwitch(s.switches, sw.name);
			if (!node) {
				log('planning', `switch ${sw.name} on ${dp}`, 'not present in the switch tree; left alone');
				continue;
			}
			if (Number(node.enable) !== sw.enable)
				add({ id: `switch.${dp}.${sw.name}`, kind: 'switch', what: `switch ${sw.name} of ${dp}`, target: { ...dpParams(dp), name: sw.name }, before: Number(node.enable), after: sw.enable, why: 'plan turns this policy on during the attack' });
		}
	}

	if (dryRun) {
		phase('done');
		log('planning', `dry run: ${changes.length} change(s) planned, none applied`, 'dry-run requested');
		return (lastResult = result('dry-run', {
			diff: changes.map((c) => ({ what: c.what, target: c.target, before: c.before, after: c.after, why: c.why })),
		}));
	}

	// ------------------------------------------------------------------ approval gate
	if (plan.approval.required) {
		phase('awaiting-approval');
		const answered = await condition(() => approval !== undefined || state.aborted, plan.approval.timeoutSeconds * 1000);
		if (state.aborted) state.decision = 'rejected';
		else if (answered && approval) state.decision = approval.approved ? 'approved' : 'rejected';
		else state.decision = plan.approval.onTimeout === 'approve' ? 'timeout-approved' : 'timeout-rejected';
		log('awaiting-approval', `decision: ${state.decision}`, answered ? 'operator answered' : `no answer within ${plan.approval.timeoutSeconds}s; default applies`);
		if (state.decision === 'rejected' || state.decision === 'timeout-rejected') {
			for (const c of changes) c.status = 'unchanged';
			phase('done');
			return (lastResult = result('rejected'));
		}
	} else state.decision = 'not-required';

	// ------------------------------------------------------------------ apply, wait, revert
	let failure: unknown;
	let cancelled = false;
	let cancelError: unknown;
	try {
		let firstGroup = true;
		// Writes in groups, in the plan's order: detection mode → detection items → blacklists → IP authentication →
		// switches. A group's writes are independent (different settings) and go out at once when
		// plan.execution.parallel; the next group starts when every write of the group has finished. Statuses and
		// the audit are recorded in the changes' order, whatever order the writes finish in.
		for (const group of writeGroups(changes, ex.parallel)) {
			if (state.aborted) break;
			const k = group[0].kind;
			phase(k === 'detectionMode' || k === 'detectionPolicy' ? 'tightening' : k === 'blacklistAdd' ? 'blacklisting' : 'rate-limiting');
			for (const c of group) c.status = 'pending';
			const done: boolean[] = group.map(() => false);
			const at: string[] = [];
			// With local writes (plan.execution.localActivities 'all') the FIRST group still runs as regular activities:
			// scheduling them completes the workflow task, which records the snapshot's local-activity markers in
			// history before any write is sent — a worker crash can never re-take the snapshot from tightened settings.
			// The later groups run in the worker without task-queue round trips (idempotent writes: a replay after a
			// crash may send them again with the same values; blacklist adds read the list first).
			const writeActs = localWrites && !firstGroup ? readActs : acts;
			firstGroup = false;
			const settled = await Promise.allSettled(
				group.map(async (c, i) => {
					await applyChange(writeActs, c, ex.blacklistConcurrency);
					done[i] = true;
					at[i] = iso(Date.now());
				}),
			);
			group.forEach((c, i) => {
				if (!done[i]) return;
				c.status = 'applied';
				c.appliedAt = at[i];
				log(state.phase, c.what, c.why, { before: c.before, after: c.after, result: 'applied' });
			});
			const failed = settled.find((r) => r.status === 'rejected');
			if (failed) throw (failed as PromiseRejectedResult).reason;
		}
		state.mitigatedAt = iso(Date.now());
		if (!state.aborted) {
			phase('waiting');
			await waitOut(readActs, plan, state, log);
		}
	} catch (e) {
		if (isCancellation(e)) {
			cancelled = true;
			cancelError = e;
		} else failure = e;
		state.error = errText(e);
		log(state.phase, cancelled ? 'cancelled' : 'failed', state.error);
	}

	phase('reverting');
	await CancellationScope.nonCancellable(async () => {
		for (const c of [...changes].reverse()) {
			if (c.status !== 'applied' && c.status !== 'pending') {
				if (c.status === 'planned') c.status = 'unchanged';
				continue;
			}
			try {
				await revertChange(revertActs, revertReads, c);
			} catch (e) {
				c.status = 'revert-failed';
				c.note = errText(e);
			}
			c.revertedAt = iso(Date.now());
			const conflict = (c.status as Change['status']) === 'conflict';
			log('reverting', c.what, conflict ? 'operator changed it during the attack: operator value kept' : 'restore the snapshot', {
				before: c.after,
				after: conflict ? c.live : c.before,
				result: c.status + (c.note ? `: ${c.note}` : ''),
			});
		}
	});
	const reverted = Date.now();
	state.revertedAt = iso(reverted);
	phase('done');

	const eventStartMs = state.eventStart !== undefined ? state.eventStart * 1000 : undefined;
	const base = eventStartMs ?? started;
	const times: Partial<AttackResponseResult> = {
		timeToDetectSeconds: eventStartMs !== undefined ? Math.max(0, (started - eventStartMs) / 1000) : undefined,
		timeToMitigateSeconds: state.mitigatedAt ? (Date.parse(state.mitigatedAt) - base) / 1000 : undefined,
		timeToRevertSeconds: state.attackEndedAt ? (reverted - Date.parse(state.attackEndedAt)) / 1000 : undefined,
	};
	const revertFailed = changes.filter((c) => c.status === 'revert-failed');
	if (failure || cancelled || revertFailed.length) {
		const r = result(cancelled ? 'cancelled-reverted' : 'failed-reverted', { ...times, error: state.error });
		lastResult = r;
		if (cancelled && !revertFailed.length) throw cancelError;
		throw ApplicationFailure.nonRetryable(
			`runbook failed (${state.error ?? 'revert failed'}); ${revertFailed.length ? `${revertFailed.length} change(s) could not be reverted` : 'changes reverted'}`,
			revertFailed.length ? 'RevertFailed' : 'RunbookFailed',
			r,
		);
	}
	lastResult = result(state.aborted ? 'aborted-reverted' : 'reverted', times);
	return lastResult;
}

// ------------------------------------------------------------------ waiting

async function waitOut(acts: Record<string, Act>, plan: Plan, state: RunbookState, log: (s: AuditEntry['step'], w: string, y: string) => void) {
	const mitigated = Date.now();
	// Conservative: the cooldown counts from the first poll that saw no attack (not from the last one that saw it).
	let endedAt: number | undefined;
	for (;;) {
		if (state.aborted) return;
		const r = await acts['dashboard.isUnderAttack']({ site_id: plan.site_id });
		const now = Date.now();
		if (Number(r?.status) === 1) {
			if (endedAt !== undefined) log('waiting', 'attack reported again', 'cooldown restarts when it ends');
			endedAt = undefined;
			state.lastAttackSeenAt = iso(now);
			state.attackEndedAt = undefined;
		} else if (endedAt === undefined) {
			endedAt = now;
			state.attackEndedAt = iso(now);
			log('waiting', 'attack no longer reported', `cooldown of ${plan.cooldownSeconds + state.extraCooldownSeconds}s starts`);
		}
		const cooldownMs = (plan.cooldownSeconds + state.extraCooldownSeconds) * 1000;
		if (endedAt !== undefined && now - endedAt >= cooldownMs) {
			log('waiting', 'cooldown elapsed without attack', 'revert');
			return;
		}
		if (now - mitigated >= plan.maxDurationSeconds * 1000) {
			log('waiting', 'maximum duration reached', `maxDurationSeconds ${plan.maxDurationSeconds}`);
			return;
		}
		const extra = state.extraCooldownSeconds;
		const wait = endedAt !== undefined ? Math.min(plan.pollSeconds * 1000, Math.max(1, cooldownMs - (now - endedAt))) : plan.pollSeconds * 1000;
		await condition(() => state.aborted || state.extraCooldownSeconds !== extra, wait);
	}
}

// ------------------------------------------------------------------ apply / revert

const KIND_ORDER: Change['kind'][] = ['detectionMode', 'detectionPolicy', 'blacklistAdd', 'ipAuth', 'switch'];

/** Parallel: one group per kind (in KIND_ORDER, each in the changes' order); otherwise one change per group. */
function writeGroups(changes: Change[], parallel: boolean): Change[][] {
	if (!parallel) return changes.map((c) => [c]);
	return KIND_ORDER.map((k) => changes.filter((c) => c.kind === k)).filter((g) => g.length > 0);
}

async function applyChange(acts: Record<string, Act>, c: Change, blacklistConcurrency: number) {
	const t = c.target;
	switch (c.kind) {
		case 'detectionMode':
			await acts['detection.setMode']({ ...opOf(t), model: String(c.after) });
			return;
		case 'detectionPolicy':
			await acts['detection.setPolicy']({ ...opOf(t), name: t.name, type: t.type, ...leafBody(c.after as Params) });
			return;
		case 'blacklistAdd':
			await settleAll((c.after as string[]).map((e) => () => acts['applicationProtection.ipBlacklist.add']({ ...dpOf(t), ip_black_list: e })), blacklistConcurrency);
			return;
		case 'ipAuth':
			await acts['applicationProtection.authIp.set']({ ...dpOf(t), ...(c.after as Params) });
			return;
		case 'switch':
			await acts['applicationProtection.switch.set']({ ...dpOf(t), name: t.name, enable: c.after });
			return;
	}
}

async function revertChange(acts: Record<string, Act>, reads: Record<string, Act>, c: Change) {
	const t = c.target;
	const decide = (live: unknown, eqAfter: boolean, eqBefore: boolean): 'restore' | 'unchanged' | 'conflict' => {
		if (eqAfter) return 'restore';
		if (eqBefore) return 'unchanged';
		c.live = live;
		return 'conflict';
	};
	switch (c.kind) {
		case 'detectionMode': {
			const live = Number((await reads['detection.getPolicy'](opOf(t)))?.model);
			const d = decide(live, live === Number(c.after), live === Number(c.before));
			if (d === 'restore') await acts['detection.setMode']({ ...opOf(t), model: String(c.before) });
			c.status = d === 'restore' ? 'restored' : d;
			return;
		}
		case 'detectionPolicy': {
			const pol = await reads['detection.getPolicy'](opOf(t));
			const leaf = pickLeaf(pol?.[ITEM_GROUP[t.name]]?.[t.name] ?? {});
			const d = decide(leaf, sameLeaf(leaf, c.after as Params), sameLeaf(leaf, c.before as Params));
			if (d === 'restore') await acts['detection.setPolicy']({ ...opOf(t), name: t.name, type: t.type, ...leafBody(c.before as Params) });
			c.status = d === 'restore' ? 'restored' : d;
			return;
		}
		case 'blacklistAdd': {
			const list = ((await reads['applicationProtection.ipBlacklist.get'](dpOf(t)))?.p_info?.ipv4?.black_soc ?? []) as ListEntry[];
			const live = list.map(entryRange).filter((r): r is Range => r !== undefined);
			const present = (c.after as string[]).filter((e) => {
				const r = parseAll([e]).ranges[0];
				return r && live.some((l) => l.start === r.start && l.end === r.end);
			});
			if (present.length) await acts['applicationProtection.ipBlacklist.remove']({ ...dpOf(t), ip_black_list: present });
			const gone = (c.after as string[]).filter((e) => !present.includes(e));
			if (gone.length) c.note = `already removed by someone else: ${gone.join(', ')}`;
			c.status = present.length ? 'restored' : 'unchanged';
			return;
		}
		case 'ipAuth': {
			const live = ipAuthBody(await reads['applicationProtection.authIp.get'](dpOf(t)));
			const d = decide(live, sameJson(live, c.after), sameJson(live, c.before));
			if (d === 'restore') await acts['applicationProtection.authIp.set']({ ...dpOf(t), ...(c.before as Params) });
			c.status = d === 'restore' ? 'restored' : d;
			return;
		}
		case 'switch': {
			const live = findSwitch(await reads['applicationProtection.switch.list'](dpOf(t)), t.name);
			const v = live ? Number(live.enable) : undefined;
			const d = decide(v, v === c.after, v === c.before);
			if (d === 'restore') await acts['applicationProtection.switch.set']({ ...dpOf(t), name: t.name, enable: c.before });
			c.status = d === 'restore' ? 'restored' : d;
			return;
		}
	}
}

// ------------------------------------------------------------------ helpers (pure)

const opOf = (t: Record<string, string>) => ({ customer_id: t.customer_id, site_id: t.site_id, network_id: t.network_id, host_id: t.host_id });
const dpOf = (t: Record<string, string>) => ({ site_id: t.site_id, domain_port_id: t.domain_port_id });

const LEAF_FIELDS = ['is_enabled', 'low_pps', 'high_pps', 'low_bps', 'high_bps', 'blackhole_bps', 'blackhole_pps', 'blackhole_time'] as const;

function pickLeaf(leaf: Params): Params {
	const out: Params = {};
	for (const f of LEAF_FIELDS) if (leaf[f] !== undefined) out[f] = leaf[f];
	return out;
}

function leafBody(leaf: Params): Params {
	const out: Params = {};
	for (const f of LEAF_FIELDS) if (leaf[f] !== undefined) out[f] = f === 'blackhole_time' ? Number(leaf[f]) : String(leaf[f]);
	return out;
}

function sameLeaf(a: Params, b: Params): boolean {
	for (const f of LEAF_FIELDS) {
		if (a[f] === undefined && b[f] === undefined) continue;
		if (a[f] === undefined || b[f] === undefined) return false;
		if (f === 'is_enabled' || f === 'blackhole_time') {
			if (Number(a[f]) !== Number(b[f])) return false;
		} else if (!sameThreshold(String(a[f]), String(b[f]))) return false;
	}
	return true;
}

/** The IP-authentication record as the set operation takes it: only the object of the chosen action (§4.3.3). */
function ipAuthBody(r: Params | undefined): Params {
	if (!r) return {};
	const action = String(r.action);
	const out: Params = { action, enable: Number(r.enable), mode: Number(r.mode) };
	const obj = r[`action_${action}`];
	if (obj && typeof obj === 'object') out[`action_${action}`] = sortKeys(obj as Params);
	return out;
}

function sortKeys(o: Params): Params {
	return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}

function sameJson(a: unknown, b: unknown): boolean {
	return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}

function canon(v: unknown): unknown {
	if (Array.isArray(v)) return v.map(canon);
	if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v as Params).sort().map((k) => [k, canon((v as Params)[k])]));
	return v;
}

interface SwitchNode {
	enable: number;
	name: string;
	[k: string]: unknown;
}

/** Finds a switch by name anywhere in the switch tree (top-level keys and nested children). */
function findSwitch(tree: unknown, name: string): SwitchNode | undefined {
	if (!tree || typeof tree !== 'object') return undefined;
	const t = tree as Params;
	if (t.name === name && 'enable' in t) return t as unknown as SwitchNode;
	if (t[name] && typeof t[name] === 'object' && 'enable' in (t[name] as Params)) return t[name] as SwitchNode;
	for (const v of Object.values(t)) {
		if (v && typeof v === 'object') {
			const f = findSwitch(v, name);
			if (f) return f;
		}
	}
	return undefined;
}

function errText(e: unknown): string {
	if (!e || typeof e !== 'object') return String(e);
	const err = e as { message?: string; cause?: { message?: string; type?: string } };
	const cause = err.cause?.message ? ` (${err.cause.type ? `${err.cause.type}: ` : ''}${err.cause.message})` : '';
	return `${err.message ?? String(e)}${cause}`;
}

import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../../api/client.ts';
import type { CatalogEntry } from '../../../api/catalog/types.ts';
import { entryRangeKey, listedByKey, ownListed, type Ipv4ListEntry } from '../../../api/catalog/ipv4.ts';
import type { WriteResult } from '../../../api/runbook/contract.ts';
import {
	findSwitch,
	ipAuthBody,
	pickLeaf,
	sameJson,
	sameLeaf,
	type Params,
} from '../../../workflows/attackResponse/settings.mts';
import { detectionLeaf } from '../../../workflows/attackResponse/live.mts';
import { filterAtTarget } from '../../../api/httpFilterMatch.ts';
import { writeAttempt, type WriteAttempt } from './writeRecord.mts';

/**
 * Exact writes: every write of a setting or a list entry through the activities (runbooks, drift enforce, expiring
 * blocks' runbook registrations, `secsvc call`) reads the live value first and answers with what it actually changed,
 * one shape for every kind (WriteResult, api/runbook/contract.ts):
 *  - a setting: the value it set and the value it replaced (read at write time), or `notOurs` — already at the
 *    target, nothing sent;
 *  - a list add: the entry it POSTed (`wrote`), or the entry found already listed (`notOurs`, nothing sent).
 * A playbook owns only what it wrote. A retry (the answer lost to a killed worker) must never take someone else's
 * value for its own: each attempt records that it is about to write, stored by the server before its write (asked beside its read)
 * (writeRecord.mts); a retry without a record knows that no attempt sent anything (a value at the target is another's).
 * A retry that finds the target in place after such a record cannot tell its own lost write from someone else's:
 * `unknown` (never reverted by the playbook, reported; docs/spec-decisions-runbooks.md). Without the worker's Temporal
 * client (direct use) the record is best effort: a setting's retry answers `unknown` too.
 */

interface Setting {
	/** The read that shows the setting (catalog op id) and its params from the write's. */
	read: string;
	readParams(p: Params): Params;
	/** The setting's value in the read's answer, and the value the write sets. */
	current(live: unknown, p: Params): unknown;
	target(p: Params): unknown;
	/** Whether the live value already is the target. */
	atTarget(live: unknown, target: unknown): boolean;
}

const opTarget = (p: Params) => ({
	customer_id: p.customer_id,
	site_id: p.site_id,
	network_id: p.network_id,
	host_id: p.host_id,
});
const dpTarget = (p: Params) => ({ site_id: p.site_id, domain_port_id: p.domain_port_id });
const same = (a: unknown, b: unknown) => a === b;
/** The detection item's fields the write names, all equal live (a write may name fewer fields than the leaf has). */
const leafAtTarget = (live: unknown, target: unknown) => {
	const t = target as Params;
	const l = live as Params;
	return sameLeaf(Object.fromEntries(Object.keys(t).map((k) => [k, l[k]])), t);
};
const xffBody = (r: unknown) => {
	const o = (r ?? {}) as Params;
	return o.name === undefined ? { mode: o.mode } : { mode: o.mode, name: o.name };
};

/** The settings the playbooks write, by write operation (and an HTTP-filter edit: the policy it replaces). */
export const EXACT_SETTINGS: Record<string, Setting> = {
	'applicationProtection.httpFilter.update': {
		read: 'applicationProtection.httpFilter.get',
		readParams: (p) => ({ ...dpTarget(p), p_flag_id: p.p_flag_id }),
		current: (l) => l,
		target: ({ site_id: _s, domain_port_id: _d, p_flag_id: _p, ...body }) => body,
		atTarget: (l, t) => filterAtTarget(l, t as Params),
	},
	'detection.setMode': {
		read: 'detection.getPolicy',
		readParams: opTarget,
		current: (l) => Number((l as Params | undefined)?.model),
		target: (p) => Number(p.model),
		atTarget: same,
	},
	'detection.setPolicy': {
		read: 'detection.getPolicy',
		readParams: opTarget,
		current: (l, p) => pickLeaf(detectionLeaf(l as never, String(p.name)) ?? {}),
		target: (p) => pickLeaf(p),
		atTarget: leafAtTarget,
	},
	'applicationProtection.authIp.set': {
		read: 'applicationProtection.authIp.get',
		readParams: dpTarget,
		current: (l) => ipAuthBody(l as Params),
		target: (p) => ipAuthBody(p),
		atTarget: sameJson,
	},
	'applicationProtection.switch.set': {
		read: 'applicationProtection.switch.list',
		readParams: dpTarget,
		current: (l, p) => {
			const n = findSwitch(l, String(p.name));
			return n ? Number(n.enable) : undefined;
		},
		target: (p) => Number(p.enable),
		atTarget: same,
	},
	'applicationProtection.xForwardedFor.set': {
		read: 'applicationProtection.xForwardedFor.get',
		readParams: dpTarget,
		current: xffBody,
		target: xffBody,
		atTarget: (l, t) => {
			const [lv, tv] = [l as Params, t as Params];
			return lv.mode === tv.mode && (tv.name === undefined || lv.name === tv.name);
		},
	},
};

/**
 * A setting's write: read, then write only when it is not at the target yet. `own`: its record kept beside other
 * writes' in one activity (exactBatch.mts); default the activity's own. With `expect` (the same operation's
 * params: a revert's own value), only while the setting is live at the value `expect` sets: found at anything else, it
 * is someone else's since (the person wins), nothing is sent and the answer is `theirs`. The check is made on this
 * write's own read, so what it cannot see is one API round trip (read → write; the API has no compare-and-set), not
 * the time since its caller's read (a workflow task, an activity's scheduling, a retry after a kill: seeds 462, 477).
 */
export async function exactSet(
	client: Client,
	op: CatalogEntry,
	params: Params,
	temporal?: () => TemporalClient,
	expect?: Params,
	own?: WriteAttempt,
): Promise<WriteResult> {
	const s = EXACT_SETTINGS[op.id];
	const valid = client.validate(op.id, params) as Params; // bad input fails before anything is read
	const target = s.target(valid);
	const r = await readRecorded(own ?? writeAttempt(temporal), () => client.call(s.read, s.readParams(valid)));
	const a = r.attempt;
	const live = s.current(r.live, valid);
	if (s.atTarget(live, target)) {
		// An earlier attempt recorded that it was about to write: the value at the target is its write, or someone
		// else's set meanwhile — the service keeps no author per value, so nothing can tell. Outcome unknown: not ours,
		// never reverted, reported (written.mts). Without a confirmed record a retry cannot tell either.
		if (a.earlier || (!a.durable && a.attempt > 1)) return { unknown: target };
		return { notOurs: target };
	}
	if (expect !== undefined && !s.atTarget(live, s.target(expect))) return { theirs: live };
	await client.call(op.id, params);
	return { wrote: target, replaced: live };
}

/**
 * The write's read, and this attempt's record stored by the server (writeRecord.mts) before the write: asked beside
 * the read, so the record costs no round trip of its own. The write follows its read at once: when the record is
 * stored only after the read has answered, the read is made again (someone else's write inside the record's round
 * trip — seconds under load — would otherwise be taken for the value ours replaces: interleave seed 32).
 * `earlier`: an earlier attempt got as far as its record (records of before: `replaced`, `listedBefore: false`);
 * then nothing is recorded and the read is made once. `beside`: something else the write waits for, asked beside
 * the read like the record (the entry's hold, entriesHold.mts): it counts as the record does, and when it answers
 * true the read is made again; when it fails nothing is sent.
 */
async function readRecorded<T>(
	a: WriteAttempt,
	read: () => Promise<T>,
	beside?: Promise<boolean>,
): Promise<{ attempt: WriteAttempt & { earlier?: object }; live: T }> {
	const e = a.earlier;
	const earlier = e && (e.writing === true || 'replaced' in e || e.listedBefore === false) ? e : undefined;
	const attempt = { ...a, earlier };
	if (earlier) return { attempt, live: (await beside, await read()) };
	let answered = false;
	const reading = read().then((v) => ((answered = true), v));
	let storedFirst = false;
	const recorded = a.record({ writing: true });
	const stored = Promise.all([recorded, beside]).then(([, again]) => void (storedFirst = !answered && again !== true));
	// Both settle before anything is decided: a failed record means nothing may be sent, whatever the read said.
	const [rec, live] = await Promise.allSettled([stored, reading]);
	if (rec.status === 'rejected') throw rec.reason;
	if (live.status === 'rejected') throw live.reason;
	return { attempt, live: storedFirst ? live.value : await read() };
}

/**
 * IP-list add / remove: adding an entry already listed sends nothing and is not ours (`notOurs`); removing an absent
 * entry is success. The list is read first (validation runs before, so bad input still fails naming the field).
 * `own`: an add's record kept beside other entries' in one activity (exactBatch.mts); default the activity's own.
 * `beside`: an add's hold asked beside its read (readRecorded).
 */
export async function exactList(
	client: Client,
	op: CatalogEntry,
	params: Params,
	temporal?: () => TemporalClient,
	own?: WriteAttempt,
	beside?: Promise<boolean>,
) {
	const valid = client.validate(op.id, params);
	const key = op.group === 'ipBlacklist' ? 'ip_black_list' : 'ip_white_list';
	const listKey = op.group === 'ipBlacklist' ? 'black_soc' : 'white_soc';
	const base = { site_id: valid.site_id, domain_port_id: valid.domain_port_id };
	type Lists = { p_info?: { ipv4?: Record<string, Ipv4ListEntry[]> } };
	const read = () => client.call<Lists>(`applicationProtection.${op.group}.get`, base);
	// An add's guard (the site's own addresses: a lookup of 2-3 API rounds, cached per site) is checked beside the
	// read, not between the read and the POST: the read→write window stays one round trip (nothing is sent when it
	// refuses; a record stored meanwhile only makes a retry more careful: `unknown` instead of `notOurs`).
	const guarded = op.action === 'add' ? client.check(op.id, params) : undefined;
	guarded?.catch(() => undefined); // thrown below, after the read
	const r =
		op.action === 'add'
			? await readRecorded(own ?? writeAttempt(temporal), read, beside)
			: { attempt: undefined, live: await read() };
	await guarded;
	const a = r.attempt;
	const list = r.live?.p_info?.ipv4?.[listKey] ?? [];
	// Live entries by normalized range, with the text the service knows them by (what a DELETE must name).
	const liveText = listedByKey(list);
	const raw = valid[key];
	const wanted = raw === undefined ? [] : Array.isArray(raw) ? (raw as string[]) : [String(raw)];
	if (op.action === 'add') {
		// Answered in the caller's own words (a playbook matches the answer with the entry it asked for).
		const entry = wanted.length ? String(params[key] ?? wanted[0]) : undefined;
		const k = entryRangeKey(String(entry ?? ''));
		const present = entry !== undefined && k !== undefined && liveText.has(k);
		if (present) {
			// An earlier attempt recorded that it was about to POST (writeRecord.mts): listed now in the notation it
			// POSTs (`start-end`), it is that POST's (its answer lost) or someone else's add meanwhile — the service keeps
			// no author per entry, so nothing can tell (interleave seed 19: n8n's add, taken for ours, was DELETEd at the
			// revert). Outcome unknown: not ours, never removed by the playbook, reported. With no record no attempt sent
			// anything: another's.
			if (a?.earlier && ownListed(liveText, String(entry)) !== undefined)
				return { entry, wrote: [], notOurs: [], unknown: [entry] };
			return { alreadyPresent: true, entry, wrote: [], notOurs: [entry] };
		}
		await client.call(op.id, params);
		return { added: entry, wrote: entry === undefined ? [] : [entry], notOurs: [] };
	}
	// An owner's remove: only entries listed as our adds write them (`ownListed`); another notation is someone else's.
	const toRemove = wanted.filter((w) => ownListed(liveText, w) !== undefined);
	const absent = wanted.filter((w) => !toRemove.includes(w));
	if (wanted.length && toRemove.length === 0) return { removed: [], absent };
	const names = toRemove.map((w) => ownListed(liveText, w) as string);
	await client.call(op.id, { ...params, [key]: wanted.length ? names : raw });
	return { removed: toRemove, absent };
}

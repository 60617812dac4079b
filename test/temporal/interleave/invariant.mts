/**
 * Issue 37's invariant, checked from the simulator's request log and final state alone:
 *
 *  (a) for every setting a runbook touched, the final value is what the non-runbook actors last wrote (or the
 *      pre-runbook value if none did);
 *  (b) no runbook or block ever DELETEs or overwrites what it did not write.
 *
 * Who wrote what comes from the log's `caller` (the runbook's worker holds the app token; blocks and drift run on a
 * worker with customer P's user token; the n8n-style client has customer N's; the console is `console`). A write is
 * what it changed: a request that leaves the setting as it was (an add of a listed entry, a value set again) is no
 * write of anyone's — the service keeps no trace of it that any actor could read. A runbook's FIRST request to a
 * setting is its mitigation and may replace what it finds; any later one (hold-the-line, revert) may only replace
 * its own value; a DELETE only removes its own entry. A block may remove what it or a runbook wrote (a runbook hands
 * its entries to a queued block at its revert, workflows/README.md "Hand-over"). Writes of others between two of a
 * runbook's reads of a setting (its GETs in the log) that return it to what the earlier read saw (or the runbook's
 * own write set) are no writes for it: no polling client of this API can observe them (`observe` below).
 */
import { toRangeText } from '../../../api/catalog/ipv4.ts';
import type { Change } from '../../../api/runbook/contract.ts';
import type { LogEntry } from '../../../simulator/index.mts';
import { ipAuthBody, pickLeaf, sameJson, sameLeaf, type Params } from '../../../workflows/attackResponse/settings.mts';

export type Actor = 'runbook' | 'block' | 'drift' | 'n8n' | 'console';
export type Values = Map<string, unknown>;
export interface Write {
	seq: number;
	actor: Actor;
	key: string;
	value: unknown;
	/** Partial detection leaf (merged into the live one). */
	merge?: boolean;
	/** A runbook's read: `key` is the prefix of every setting the read shows. */
	read?: true;
}
export interface Violation {
	key: string;
	/** (b): whose request it was. */
	by?: Actor;
	rule: '(a) final value' | '(b) delete' | '(b) overwrite';
	text: string;
}

/** Live settings of one site / domain-port as the invariant compares them (keys as in `writesOf`). */
export function settingValues(
	dp: string,
	live: { model: unknown; leaves: Record<string, Params>; blacklist: Params[]; ipAuth: Params; pAuth: unknown },
): Values {
	const v: Values = new Map<string, unknown>([
		['detection.mode', Number(live.model)],
		[`ipAuth.${dp}`, ipAuthBody(live.ipAuth)],
		[`switch.${dp}.p_auth`, Number(live.pAuth)],
	]);
	for (const [name, leaf] of Object.entries(live.leaves)) v.set(`detection.${name}`, pickLeaf(leaf));
	for (const e of live.blacklist) {
		const text = e.start_ip !== undefined ? `${String(e.start_ip)}-${String(e.end_ip)}` : String(e.ip);
		v.set(`bl.${dp}.${entryId(text)}`, 1);
	}
	return v;
}

/**
 * A blacklist entry as the service keeps it: by its notation (`a`, `a-b`, `a/n`), not by its range — the simulator
 * holds `203.0.113.10` and `203.0.113.10-203.0.113.10` as two entries and a DELETE removes the one it names.
 */
const entryId = (text: string) => text.replace(/\s+/g, '');

const valueOf = (v: Values, key: string) => v.get(key) ?? (key.startsWith('bl.') ? 0 : undefined);

function same(key: string, a: unknown, b: unknown): boolean {
	if (key.startsWith('detection.') && key !== 'detection.mode')
		return sameLeaf((a ?? {}) as Params, (b ?? {}) as Params);
	return sameJson(a, b);
}

const one = (v: unknown) => (Array.isArray(v) ? String(v[0]) : String(v));

/** The reads a runbook polls with, by the prefix of the keys each shows. */
const READS: Record<string, (dp: string | undefined) => string> = {
	'detection.getPolicy': () => 'detection.',
	'applicationProtection.ipBlacklist.get': (dp) => `bl.${dp}.`,
	'applicationProtection.authIp.get': (dp) => `ipAuth.${dp}`,
	'applicationProtection.switch.list': (dp) => `switch.${dp}.`,
};

/** The setting writes of one successful log entry (a DELETE of several entries is one write each), or a runbook's read. */
export function writesOf(e: LogEntry, actorOf: (caller: string, key: string) => Actor | undefined): Write[] {
	if (e.code !== 0 || !e.opId || !e.caller) return [];
	const dp = /\/domain-port\/([^/]+)\//.exec(e.path)?.[1];
	if (e.method === 'GET') {
		const key = READS[e.opId]?.(dp);
		return key && actorOf(e.caller, key) === 'runbook'
			? [{ seq: e.seq, actor: 'runbook', key, value: undefined, read: true }]
			: [];
	}
	const b = (e.body ?? {}) as Record<string, unknown>;
	const out: Omit<Write, 'actor' | 'seq'>[] = [];
	switch (e.opId) {
		case 'detection.setMode':
			out.push({ key: 'detection.mode', value: Number(one(b.model)) });
			break;
		case 'detection.setPolicy': {
			const leaf: Params = {};
			for (const [k, v] of Object.entries(b)) if (k !== 'name' && k !== 'type') leaf[k] = one(v);
			out.push({ key: `detection.${one(b.name)}`, value: pickLeaf(leaf), merge: true });
			break;
		}
		case 'applicationProtection.authIp.set':
			out.push({ key: `ipAuth.${dp}`, value: ipAuthBody(b) });
			break;
		case 'applicationProtection.switch.set':
			out.push({ key: `switch.${dp}.${one(b.name)}`, value: Number(one(b.enable)) });
			break;
		case 'applicationProtection.ipBlacklist.add':
			out.push({ key: `bl.${dp}.${entryId(one(b.ip_black_list))}`, value: 1 });
			break;
		case 'applicationProtection.ipBlacklist.remove':
			for (const t of one(e.query.ip_black_list).split(','))
				if (t.trim()) out.push({ key: `bl.${dp}.${entryId(t)}`, value: 0 });
			break;
	}
	return out.flatMap((w) => {
		const actor = actorOf(e.caller as string, w.key);
		return actor ? [{ ...w, actor, seq: e.seq }] : [];
	});
}

interface KeyState {
	cur: unknown;
	/** Who last changed it, as a runbook could know it (see `observe`) ... */
	last: { actor: Actor | 'nobody (the pre-runbook value)'; seq: number };
	/** ... and as it happened (a block is judged by this: its own writes are known to it). */
	written: KeyState['last'];
	touched: Set<Actor>;
	/** The last effective write of an actor other than a runbook (undefined: none). */
	other?: { value: unknown; actor: Actor; seq: number };
	/** The key as the runbook last observed it (its read of the setting, or its own write): value and owners. */
	seen?: { cur: unknown; last: KeyState['last']; other: KeyState['other'] };
	/** Its owners at the runbook's last read of it (`window`). */
	atRead?: { seq: number; last: KeyState['last']; other: KeyState['other'] };
}

/**
 * The keys of the settings and entries a runbook reported as outcome unknown (`written.unknown`: a write whose answer
 * was lost finds the target in place, or a write that never answered): it leaves them as they are, since no client of
 * this API can tell its own lost write from someone else's (no author per value), and (a) cannot hold for them.
 */
export function unknownKeys(changes: readonly Change[]): Set<string> {
	const keys = new Set<string>();
	for (const c of changes) {
		const u = c.written?.unknown;
		if (u === undefined) continue;
		const t = c.target;
		if (c.kind === 'blacklistAdd')
			// As the runbook POSTs it (`start-end`), the notation the log and the final list show.
			for (const e of Array.isArray(u) ? (u as string[]) : [])
				keys.add(`bl.${t.domain_port_id}.${entryId(toRangeText(e))}`);
		else if (c.kind === 'detectionMode') keys.add('detection.mode');
		else if (c.kind === 'detectionPolicy') keys.add(`detection.${t.name}`);
		else if (c.kind === 'ipAuth') keys.add(`ipAuth.${t.domain_port_id}`);
		else keys.add(`switch.${t.domain_port_id}.${t.name}`);
	}
	return keys;
}

/**
 * Replays the writes in log order from the initial values; returns every violation of (a) and (b). (a) is not
 * checked for `unknown` keys (see unknownKeys); (b) is, for every key. `windows` collects the writes of others that
 * fell inside a runbook write's own read → write window (see `window`).
 */
export function check(
	initial: Values,
	final: Values,
	writes: readonly Write[],
	unknown: ReadonlySet<string> = new Set(),
	windows: string[] = [],
): Violation[] {
	const keys = new Map<string, KeyState>();
	const violations: Violation[] = [];
	const read = new Map<string, number>(); // prefixes a runbook has read, at which seq
	const sorted = [...writes].sort((x, y) => x.seq - y.seq);
	const ownRead = readBefore(sorted);
	for (const w of sorted) {
		if (w.read) {
			read.set(w.key, w.seq);
			for (const [key, k] of keys)
				if (key.startsWith(w.key)) {
					observe(key, k);
					k.atRead = { seq: w.seq, last: k.last, other: k.other };
				}
			continue;
		}
		let k = keys.get(w.key);
		if (!k) {
			k = {
				cur: valueOf(initial, w.key),
				last: { actor: 'nobody (the pre-runbook value)', seq: 0 },
				written: { actor: 'nobody (the pre-runbook value)', seq: 0 },
				touched: new Set(),
			};
			// Unwritten until now: a runbook's earlier read of it saw the initial value.
			const at = Math.max(-1, ...[...read].filter(([p]) => w.key.startsWith(p)).map(([, seq]) => seq));
			if (at >= 0) {
				seen(k);
				k.atRead = { seq: at, last: k.last, other: k.other };
			}
			keys.set(w.key, k);
		}
		const next = w.merge ? { ...(k.cur as Params), ...(w.value as Params) } : w.value;
		// A runbook write inside its own read → write window counts as its write even when it changes nothing: the
		// other's write it did not see may have set its very target (seed 135: the console set ip authentication to
		// the runbook's target between its read and its write, and the revert restored what the read saw).
		const inWindow = w.actor === 'runbook' && window(w, k, ownRead.get(w.seq), windows);
		const effective = inWindow || !same(w.key, next, k.cur);
		if (effective && (w.actor === 'runbook' || w.actor === 'block')) {
			const removal = w.key.startsWith('bl.') && w.value === 0;
			const by = w.actor === 'block' ? k.written : k.last;
			const ok = removal
				? by.actor === w.actor || (w.actor === 'block' && by.actor === 'runbook')
				: by.actor === w.actor || !k.touched.has(w.actor);
			if (!ok)
				violations.push({
					key: w.key,
					by: w.actor,
					rule: removal ? '(b) delete' : '(b) overwrite',
					text: `${w.actor} ${removal ? 'DELETEd' : `wrote ${show(w.key, next)} over`} ${w.key} at seq ${w.seq}; its value ${show(w.key, k.cur)} was written by ${by.actor}${by.seq ? ` at seq ${by.seq}` : ''}`,
				});
		}
		if (w.actor === 'runbook' || w.actor === 'block') k.touched.add(w.actor);
		if (!effective) continue;
		k.cur = next;
		k.last = k.written = { actor: w.actor, seq: w.seq };
		if (w.actor !== 'runbook') k.other = { value: next, actor: w.actor, seq: w.seq };
		else seen(k);
	}
	for (const [key, k] of keys) {
		if (!k.touched.has('runbook') || unknown.has(key)) continue;
		const expected = k.other ? k.other.value : valueOf(initial, key);
		const got = valueOf(final, key);
		if (!same(key, got, expected))
			violations.push({
				key,
				rule: '(a) final value',
				text: `${key} is ${show(key, got)} at the end; ${k.other ? `${k.other.actor} last wrote ${show(key, expected)} (seq ${k.other.seq})` : `nobody but the runbook wrote it: the pre-runbook value ${show(key, expected)}`}`,
			});
	}
	return violations;
}

/**
 * A runbook's read of a key. Writes of others since its last observation (its previous read, or its own write) that
 * leave the key as it was then are no writes for it: the service keeps no write history and no author or time per
 * value (spec: every read answers the current value only), so no client that polls can tell a setting flipped away
 * and back between two of its reads from one never touched. The key's owners go back to what they were then.
 */
/**
 * The write's own read → write window. Every write of a runbook reads the setting first and writes only when the read
 * shows what it expects (worker/src/activities/exactWrites.mts: a revert's restore only while the value is still its
 * own); the API has no compare-and-set, so a write of someone else's that lands after that read and before the write
 * is invisible to any client — the one gap the design accepts (docs/spec-decisions-runbooks.md). Such a write is judged
 * by the owners its read saw, and reported in `windows`. Only when the runbook's request just before this write (on
 * the site) is a read of this setting (`ownRead`): a write that followed any other request of its own — a workflow's
 * read, then an activity's (seeds 462, 477 before the fix), a poll, another write — gets no such allowance.
 */
function window(w: Write, k: KeyState, ownRead: number | undefined, windows: string[]): boolean {
	const r = k.atRead;
	if (ownRead === undefined || r?.seq !== ownRead || k.last.seq <= r.seq) return false;
	windows.push(
		`${w.key}: ${k.last.actor}'s write at seq ${k.last.seq} fell between the runbook's read at seq ${r.seq} and its write at seq ${w.seq}`,
	);
	k.last = r.last;
	k.other = r.other;
	return true;
}

/** For each runbook write (by seq), the seq of the runbook's request just before it when that was a read. */
function readBefore(sorted: readonly Write[]): Map<number, number> {
	const out = new Map<number, number>();
	let prev: Write | undefined;
	for (const w of sorted) {
		if (w.actor !== 'runbook') continue;
		if (!w.read && prev?.read && prev.seq < w.seq && w.key.startsWith(prev.key)) out.set(w.seq, prev.seq);
		if (prev?.seq !== w.seq) prev = w;
	}
	return out;
}

function observe(key: string, k: KeyState): void {
	if (k.seen && same(key, k.cur, k.seen.cur)) {
		k.last = k.seen.last;
		k.other = k.seen.other;
	}
	seen(k);
}

const seen = (k: KeyState) => (k.seen = { cur: k.cur, last: k.last, other: k.other });

const show = (key: string, v: unknown) => (key.startsWith('bl.') ? (v ? 'listed' : 'not listed') : JSON.stringify(v));

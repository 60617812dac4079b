/**
 * Issue 37 item 4: a seeded generator of interleavings on one site. A schedule is a runbook (with or without an
 * approval gate) plus steps, each anchored to a moment of the runbook (before it starts, right after its start, at
 * its approval gate, during its wait, after the attack stopped) and run in order after a delay: writes by an
 * n8n-style client and by the vendor's console, expiring blocks, drift enforces, abort / extend-cooldown signals and
 * worker kills. Pure: the same seed gives the same schedule.
 */
import { seededRandom } from '../helpers.mts';

/** The attack's sources (non-adjacent: the runbook blacklists each as its own entry) and an address nobody attacks. */
export const SOURCES = ['203.0.113.10', '203.0.113.20', '203.0.113.30'] as const;
export const BYSTANDER = '203.0.113.40';

/** IP-authentication records the actors write: the plan's own value, the fleet's default and two of a person's. */
export const IP_AUTH_VALUES = [
	{
		action: 'ratelimit',
		enable: 1,
		mode: 2,
		action_ratelimit: { duration: 120, ratelimit_rps: 50, threshold_rps: 100 },
	},
	{
		action: 'ratelimit',
		enable: 0,
		mode: 0,
		action_ratelimit: { duration: 60, ratelimit_rps: 100, threshold_rps: 200 },
	},
	{ action: 'blacklist', enable: 1, mode: 1, action_blacklist: { duration: 600, threshold_rps: 77 } },
	{ action: 'ratelimit', enable: 1, mode: 1, action_ratelimit: { duration: 30, ratelimit_rps: 10, threshold_rps: 20 } },
] as const;

/** tcp_syn detection thresholds the actors write: the fleet's default, the plan's (factor 0.5) and a person's. */
export const TCP_SYN_VALUES = [
	{ is_enabled: 1, low_pps: '50K', high_pps: '200K' },
	{ is_enabled: 1, low_pps: '25K', high_pps: '100K' },
	{ is_enabled: 1, low_pps: '40K', high_pps: '150K' },
] as const;

export type Anchor = 'pre' | 'start' | 'gate' | 'waiting' | 'stopped';
export type Write =
	| { op: 'blAdd'; entry: string }
	| { op: 'blRemove'; entry: string }
	| { op: 'ipAuth'; value: number }
	| { op: 'switch'; enable: 0 | 1 }
	| { op: 'item'; value: number }
	| { op: 'mode'; model: 0 | 1 };
export type Act =
	| ({ actor: 'n8n' | 'console' } & Write)
	| { actor: 'n8n' | 'console'; op: 'blockAttack' }
	| { actor: 'block'; entry: string; seconds: number }
	| { actor: 'drift'; model?: 0 | 1; ipAuth?: number; pAuth?: 0 | 1 }
	| { actor: 'abort' }
	| { actor: 'extend'; seconds: number }
	| { actor: 'kill' };
export interface Step {
	at: Anchor;
	delayMs: number;
	act: Act;
}
export interface Schedule {
	seed: number;
	/** none: no gate; otherwise the decision taken at the gate (after the gate's steps). */
	gate: 'none' | 'approve' | 'reject';
	cooldownSeconds: number;
	/** plan.execution: which calls run as local activities, and whether a kind's writes go out at once. */
	execution: { localActivities: 'none' | 'reads' | 'all'; parallel: boolean };
	steps: Step[];
}

export function generate(seed: number): Schedule {
	const r = seededRandom(seed);
	const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
	const chance = (p: number) => r() < p;
	const gate = chance(0.4) ? 'none' : chance(0.88) ? 'approve' : 'reject';
	const steps: Step[] = [];
	const anchors: [Anchor, number][] = [
		['pre', chance(0.25) ? 1 : 0],
		['start', Math.floor(r() * 3)],
		['gate', gate === 'none' ? 0 : 1 + Math.floor(r() * 3)],
		['waiting', Math.floor(r() * 4)],
		['stopped', Math.floor(r() * 3)],
	];
	for (const [at, n] of anchors)
		for (let i = 0; i < n; i++)
			steps.push({ at, delayMs: Math.floor(r() * (at === 'stopped' ? 1500 : 700)), act: act(at) });
	const execution = { localActivities: pick(['all', 'all', 'all', 'reads', 'none'] as const), parallel: chance(0.8) };
	return { seed, gate, cooldownSeconds: 1 + Math.floor(r() * 2), execution, steps };

	function act(at: Anchor): Act {
		const w = r();
		const entry = () => pick([...SOURCES, BYSTANDER]);
		if (w < 0.5) {
			const actor = chance(0.55) ? 'n8n' : 'console';
			// The headline workflow (trigger → block the attack's sources) racing the runbook: the repro.
			if ((at === 'gate' || at === 'start') && chance(0.35)) return { actor, op: 'blockAttack' };
			const k = r();
			if (k < 0.25) return { actor, op: 'blAdd', entry: entry() };
			if (k < 0.42) return { actor, op: 'blRemove', entry: entry() };
			if (k < 0.6) return { actor, op: 'ipAuth', value: Math.floor(r() * IP_AUTH_VALUES.length) };
			if (k < 0.74) return { actor, op: 'switch', enable: pick([0, 1] as const) };
			if (k < 0.87) return { actor, op: 'item', value: Math.floor(r() * TCP_SYN_VALUES.length) };
			return { actor, op: 'mode', model: pick([0, 1] as const) };
		}
		if (w < 0.64) return { actor: 'block', entry: entry(), seconds: 1 + Math.floor(r() * 3) };
		if (w < 0.76)
			return {
				actor: 'drift',
				...(chance(0.5) ? { model: pick([0, 1] as const) } : {}),
				...(chance(0.5) ? { ipAuth: Math.floor(r() * IP_AUTH_VALUES.length) } : {}),
				...(chance(0.6) ? { pAuth: pick([0, 1] as const) } : {}),
			};
		if (w < 0.84 && (at === 'waiting' || at === 'gate')) return { actor: 'abort' };
		if (w < 0.97 && at !== 'pre') return { actor: 'extend', seconds: 1 + Math.floor(r() * 2) };
		if (w >= 0.97) return { actor: 'kill' };
		return { actor: 'n8n', op: 'switch', enable: pick([0, 1] as const) };
	}
}

/** One line per step, for the failure report. */
export function describe(s: Schedule): string {
	const ex = `localActivities ${s.execution.localActivities}${s.execution.parallel ? ', parallel' : ''}`;
	const lines = [`seed ${s.seed}: gate ${s.gate}, cooldown ${s.cooldownSeconds} s, ${ex}`];
	for (const st of s.steps)
		lines.push(`  ${st.at.padEnd(7)} +${String(st.delayMs).padStart(4)} ms  ${actText(st.act)}`);
	return lines.join('\n');
}

export function actText(a: Act): string {
	const { actor, ...rest } = a;
	return `${actor} ${JSON.stringify(rest)}`;
}

/**
 * Attack waves (the simulator's reading of §4.4 for issue 39): an attack keeps its alert_id while its sources shift.
 * From `waves[i].at` seconds after the start the attack comes from that wave's sources (new ones, an earlier wave's
 * returning, or both); the threat map, the event's other modules and the blacklist's effect follow the sources of
 * the moment. Documented in simulator/README.md ("Attack model").
 */
import type { Attack, AttackSource } from './state.mts';

/** The sources attacking at time t (unix seconds): the latest wave begun by then, else the attack's first sources. */
export function sourcesAt(a: Attack, t: number): AttackSource[] {
	let out = a.sources;
	for (const w of a.waves ?? []) if (a.start + w.at <= t) out = w.sources;
	return out;
}

/** Every source of the attack up to t (network summaries count an attack's whole history), one row per ip. */
export function sourcesUntil(a: Attack, t: number): AttackSource[] {
	const out = [...a.sources];
	for (const w of a.waves ?? [])
		if (a.start + w.at <= t) for (const s of w.sources) if (!out.some((o) => o.ip === s.ip)) out.push(s);
	return out;
}

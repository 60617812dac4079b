/** §4.4 dashboard: events, event detail, flow-down alerts, traffic, active mitigation, under attack, network summary. */
import { formatYmdhms, notFound, parseYmdhms } from '../util.mts';
import { activeMitigation, currentTraffic, eventDetail, eventOf, isUnderAttack, networkSummary } from '../attacks.mts';
import { type HandlerDef } from './shared.mts';

export const dashboard: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.4 dashboard
	'dashboard.eventDetail': {
		enc: 'query',
		fn: (sim, c) => {
			const module = c.q.oneOf(
				'module',
				['traffic', 'characterization', 'traffic_patterns', 'threat_map'] as const,
				true,
			);
			c.done();
			const now = sim.nowSec();
			const a = sim.world.attacks.find((x) => x.id === c.params.event_id && x.start <= now);
			if (!a) throw notFound(`event_id: DDoS event '${c.params.event_id}' does not exist`);
			// The spec names each module's content (characterization[], threat_map{}, traffic{}, traffic_patterns[]):
			// the result is an object holding the requested module under its name.
			return { [module as string]: eventDetail(sim.world, a, now, module as string) };
		},
	},
	'dashboard.activeMitigation': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return activeMitigation(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.currentTraffic': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return currentTraffic(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.ddosEvents': {
		enc: 'query',
		fn: (sim, c) => {
			const site = sim.site(c.params.site_id);
			const now = sim.nowSec();
			const q = c.q;
			const alert_id = q.str('alert_id');
			const site_ip = q.str('site_ip');
			const site_name = q.str('site_name');
			const digits = (f: string, def: number, min: number) => {
				const v = q.str(f);
				if (v === undefined) return def;
				if (!/^\d+$/.test(v)) {
					q.issue(f, 'must be a non-negative integer (sent as a string)');
					return def;
				}
				if (Number(v) < min) q.issue(f, `must be at least ${min}`);
				return Number(v);
			};
			const start = digits('start', 0, 0);
			const num = digits('num', 10, 1);
			if (num > sim.opts.maxEventsNum) q.issue('num', `must be at most ${sim.opts.maxEventsNum}`);
			const time = (f: string) => {
				const v = q.str(f);
				if (v === undefined) return undefined;
				const t = parseYmdhms(v);
				if (t === undefined) q.issue(f, "must be a date-time written 'YYYY-MM-DD HH:MM:SS'");
				return t;
			};
			const st = time('start_time');
			const et = time('end_time');
			const status = q.oneOf('status', ['all', 'stopped', 'ongoing'] as const) ?? 'all';
			const d = new Date(now * 1000);
			const from = st ?? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
			const to = et ?? from + 31 * 86400;
			if (to < from) q.issue('end_time', `must not be before start_time (${formatYmdhms(from)})`);
			else if (to - from > 31 * 86400) q.issue('end_time', 'must be at most 31 days after start_time (§8)');
			c.done();
			const all = sim.world.attacks
				.filter((a) => a.site_id === site.site_id && a.start <= now && a.start <= to)
				.map((a) => eventOf(sim.world, a, now))
				.filter((e) => (e.status === 1 ? now : e.end_time) >= from)
				.filter((e) => alert_id === undefined || e.alert_id === alert_id)
				.filter((e) => site_ip === undefined || e.site_ip === site_ip)
				.filter((e) => site_name === undefined || e.site_name === site_name)
				.filter((e) => status === 'all' || (status === 'ongoing' ? e.status === 1 : e.status === 0))
				.sort((a, b) => b.start_time - a.start_time || (a.alert_id < b.alert_id ? 1 : -1));
			return { events: all.slice(start, start + num), total: all.length };
		},
	},
	'dashboard.flowDownEvents': {
		enc: 'query',
		fn: (sim, c) => {
			const site = sim.site(c.params.site_id);
			const now = sim.nowSec();
			const ts = (f: string) => {
				const v = c.q.str(f);
				if (v === undefined) return undefined;
				if (!/^\d{10}$/.test(v)) {
					c.q.issue(f, 'must be a 10-digit Unix timestamp (seconds)');
					return undefined;
				}
				return Number(v);
			};
			const et = ts('end_time');
			const st = ts('start_time');
			const status = c.q.intOneOf('status', [0, 1, 2]) ?? 2;
			const to = et ?? now;
			const from = st ?? to - 90 * 86400;
			if (to < from) c.q.issue('end_time', 'must not be before start_time');
			else if (to - from > 90 * 86400) c.q.issue('start_time', 'must be at most 90 days before end_time (§8)');
			c.done();
			return sim.world.flowDowns
				.filter(
					(f) =>
						f.site_id === site.site_id &&
						f.start_time <= now &&
						f.start_time <= to &&
						(f.end_time === 0 || f.end_time > now ? now : f.end_time) >= from,
				)
				.map((f) => {
					const ongoing = f.end_time === 0 || f.end_time > now;
					return {
						alert_id: f.alert_id,
						duration: (ongoing ? now : f.end_time) - f.start_time,
						start_time: f.start_time,
						end_time: ongoing ? 0 : f.end_time,
						router_name: f.router_name,
						site: site.site_name,
						_ongoing: ongoing,
					};
				})
				.filter((f) => status === 2 || (status === 0 ? f._ongoing : !f._ongoing))
				.sort((a, b) => b.start_time - a.start_time)
				.map(({ _ongoing, ...f }) => f);
		},
	},
	'dashboard.isUnderAttack': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return isUnderAttack(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.networkSummary': {
		enc: 'query',
		fn: (sim, c) => {
			const range = c.q.oneOf('range', ['hour', 'day', 'week', 'month'] as const) ?? 'hour';
			const type = c.q.oneOf('type', ['bps', 'pps'] as const) ?? 'bps';
			c.done();
			return networkSummary(sim.world, sim.site(c.params.site_id), sim.nowSec(), range, type);
		},
	},
};

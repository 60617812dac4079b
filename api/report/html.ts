import type { ReportModel, SeriesKind } from './model';

/**
 * The attack report as ONE self-contained HTML file: inline CSS and SVG, no script, no external font, image or
 * style (works offline and as an e-mail attachment); light and dark (prefers-color-scheme); fluid from phone width
 * to desktop. Every chart point is a `<circle data-kind>` and every marker a `<g class="marker">` (the browser test
 * counts them).
 */

const esc = (s: unknown) =>
	String(s ?? '').replace(
		/[&<>"']/g,
		(c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
	);

export function formatBps(b: number): string {
	if (!Number.isFinite(b) || b <= 0) return '0';
	const units: [number, string][] = [
		[1e12, 'Tbps'],
		[1e9, 'Gbps'],
		[1e6, 'Mbps'],
		[1e3, 'Kbps'],
	];
	for (const [d, u] of units) if (b >= d) return `${trim(b / d)} ${u}`;
	return `${Math.round(b)} bps`;
}
const trim = (n: number) =>
	n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1).replace(/\.0$/, '') : n.toFixed(2).replace(/\.?0+$/, '');

const seconds = (s: number | undefined) =>
	s === undefined || !Number.isFinite(s)
		? 'n/a'
		: s < 120
			? `${s.toFixed(1)} s`
			: `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;

const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 19);

/** 1-2-5 steps: about `n` round ticks from 0 to at least `max`. */
function niceTicks(max: number, n = 4): number[] {
	if (!(max > 0)) return [0, 1];
	const raw = max / n;
	const p = 10 ** Math.floor(Math.log10(raw));
	const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
	const ticks: number[] = [];
	for (let v = 0; v < max + step * 0.999; v += step) ticks.push(v);
	return ticks;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400];

const COLOR: Record<SeriesKind, string> = {
	attack: 'var(--attack)',
	clean: 'var(--clean)',
	reported: 'var(--reported)',
};

interface ChartSize {
	cls: 'wide' | 'narrow';
	W: number;
	H: number;
	L: number;
	xTicks: number;
	/** Characters → width of a marker label, for the overlap check. */
	charW: number;
}
const WIDE: ChartSize = { cls: 'wide', W: 1000, H: 360, L: 72, xTicks: 6, charW: 7 };
const NARROW: ChartSize = { cls: 'narrow', W: 480, H: 400, L: 88, xTicks: 3, charW: 8 };

/** The chart twice: wide (desktop) and narrow (phones, larger type); CSS shows one of them. */
function chart(m: ReportModel): string {
	const all0 = m.series.flatMap((s) => s.points);
	if (!all0.length && !m.markers.length)
		return `<p class="empty">No traffic data was recorded for this report.</p>${(m.notes ?? []).map((n) => `<p class="note">${esc(n)}</p>`).join('')}`;
	const legend = m.series
		.map(
			(s) =>
				`<span class="key"><i style="background:${COLOR[s.kind]}"></i>${esc(s.label)} <small>(${s.points.length})</small></span>`,
		)
		.join('');
	const notes = (m.notes ?? []).map((n) => `<p class="note">${esc(n)}</p>`).join('');
	return `${svgChart(m, WIDE)}${svgChart(m, NARROW)}<div class="legend">${legend}<span class="key"><i class="dash"></i>markers (UTC)</span></div>${notes}`;
}

function svgChart(m: ReportModel, z: ChartSize): string {
	const { W, H, L } = z;
	const R = 36;
	const T = 56;
	const B = 40;
	const all = m.series.flatMap((s) => s.points);
	const xs = [...all.map((p) => p[0]), ...m.markers.map((k) => k.at)];
	let x0 = Math.min(...xs);
	let x1 = Math.max(...xs);
	if (x1 - x0 < 10_000) {
		const grow = (10_000 - (x1 - x0)) / 2;
		x0 -= grow;
		x1 += grow;
	}
	const pad = (x1 - x0) * 0.03;
	x0 -= pad;
	x1 += pad;
	const ticksY = niceTicks(Math.max(1, ...all.map((p) => p[1])));
	const y1 = ticksY[ticksY.length - 1];
	const X = (t: number) => L + ((t - x0) / (x1 - x0)) * (W - L - R);
	const Y = (v: number) => H - B - (v / y1) * (H - T - B);
	const f = (n: number) => n.toFixed(1);
	const overAt = m.markers.find((k) => k.kind === 'over')?.at;

	const grid = ticksY
		.map(
			(v) =>
				`<line class="grid" x1="${L}" x2="${W - R}" y1="${f(Y(v))}" y2="${f(Y(v))}"/><text class="tick" x="${L - 8}" y="${f(Y(v) + 4)}" text-anchor="end">${esc(formatBps(v))}</text>`,
		)
		.join('');
	// Time ticks on round seconds/minutes/hours, about z.xTicks of them.
	const stepMs =
		(TIME_STEPS.find((s) => (x1 - x0) / (s * 1000) <= z.xTicks) ?? TIME_STEPS[TIME_STEPS.length - 1]) * 1000;
	const ticks: number[] = [];
	for (let t = Math.ceil(x0 / stepMs) * stepMs; t <= x1; t += stepMs) ticks.push(t);
	const xt = ticks
		.map(
			(t) =>
				`<line class="grid" x1="${f(X(t))}" x2="${f(X(t))}" y1="${H - B}" y2="${H - B + 5}"/><text class="tick" x="${f(X(t))}" y="${H - B + 22}" text-anchor="middle">${hhmmss(t)}</text>`,
		)
		.join('');

	const order: SeriesKind[] = ['clean', 'attack', 'reported'];
	const series = [...m.series]
		.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind))
		.map((s) => {
			const pts = [...s.points].sort((a, b) => a[0] - b[0]);
			// The event's series are per-interval samples: drawn as steps, the last one held until the attack was over.
			const stepped = s.kind !== 'reported';
			const end = stepped ? Math.max(pts[pts.length - 1][0], overAt ?? pts[pts.length - 1][0]) : pts[pts.length - 1][0];
			const line =
				pts
					.map((p, i) => `${i ? (stepped ? `H${f(X(p[0]))}V` : `L${f(X(p[0]))},`) : `M${f(X(p[0]))},`}${f(Y(p[1]))}`)
					.join('') + (stepped && end > pts[pts.length - 1][0] ? `H${f(X(end))}` : '');
			const area =
				s.kind === 'attack' && X(end) - X(pts[0][0]) > 1
					? `<path class="area" fill="${COLOR.attack}" d="${line}V${f(Y(0))}H${f(X(pts[0][0]))}Z"/>`
					: '';
			const dots = pts
				.map(
					(p) =>
						`<circle data-kind="${s.kind}" cx="${f(X(p[0]))}" cy="${f(Y(p[1]))}" r="${s.kind === 'reported' ? 3.5 : 2.5}" fill="${COLOR[s.kind]}"><title>${esc(`${hhmmss(p[0])} UTC — ${formatBps(p[1])}`)}</title></circle>`,
				)
				.join('');
			return `<g class="series ${s.kind}" data-points="${pts.length}">${area}${pts.length > 1 || end > pts[0][0] ? `<path class="line" stroke="${COLOR[s.kind]}" d="${line}"/>` : ''}${dots}</g>`;
		})
		.join('');

	// Marker labels in up to three rows so close markers do not overlap.
	const rows: number[] = [];
	const markers = m.markers
		.map((k) => {
			const x = X(k.at);
			const w = k.label.length * z.charW + 10;
			let row = rows.findIndex((end) => end < x - w / 2);
			if (row === -1) row = rows.length < 3 ? rows.length : 0;
			rows[row] = x + w / 2;
			const anchor = x < L + w / 2 ? 'start' : x > W - R - w / 2 ? 'end' : 'middle';
			const ty = 16 + row * 15;
			return `<g class="marker ${k.kind}" data-kind="${k.kind}"><line x1="${f(x)}" x2="${f(x)}" y1="${ty + 4}" y2="${H - B}"/><text x="${f(x)}" y="${ty}" text-anchor="${anchor}">${esc(k.label)}</text><title>${esc(`${k.label} at ${hhmmss(k.at)} UTC`)}</title></g>`;
		})
		.join('');

	return `<svg class="chart ${z.cls}" viewBox="0 0 ${W} ${H}" role="img" aria-label="Traffic over time with markers" preserveAspectRatio="xMidYMid meet">
<title>Traffic over time (UTC)</title>${grid}<line class="axis" x1="${L}" x2="${W - R}" y1="${f(Y(0))}" y2="${f(Y(0))}"/>${xt}${series}${markers}</svg>`;
}

const STATUS_CLASS: Record<string, string> = {
	restored: 'ok',
	applied: 'warn',
	unchanged: 'muted',
	conflict: 'bad',
	'revert-failed': 'bad',
	planned: 'muted',
	pending: 'warn',
};

/** A table; on phones each row becomes a card whose cells carry their column's name (data-label). */
function table(head: string[], rows: string[][], cls = ''): string {
	const cell = (td: string, i: number) => td.replace(/^<td/, `<td data-label="${esc(head[i])}"`);
	return `<div class="scroll"><table class="${cls}"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table></div>`;
}

export function renderReportHtml(m: ReportModel): string {
	const outcomeClass = !m.outcome
		? 'muted'
		: m.outcome === 'reverted'
			? 'ok'
			: /failed|cancel/.test(m.outcome)
				? 'bad'
				: 'warn';
	const kpis = [
		...m.times.map(
			(t) =>
				`<div class="kpi"><div class="label">${esc(t.label)}</div><div class="value">${esc(seconds(t.seconds))}</div><div class="hint">${esc(t.hint)}</div></div>`,
		),
		m.approval
			? `<div class="kpi"><div class="label">Approval</div><div class="value small">${esc(m.approval.decision)}</div><div class="hint">${esc([m.approval.by ? `by ${m.approval.by}` : '', m.approval.at ? `at ${m.approval.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}` : '', m.approval.reason ?? ''].filter(Boolean).join(' · ') || '—')}</div></div>`
			: '',
	].join('');
	const sections: string[] = [];
	sections.push(`<section class="card"><h2>Traffic</h2>${chart(m)}</section>`);
	if (m.changes.length)
		sections.push(
			`<section class="card"><h2>Changes <small>${m.changes.length}</small></h2>${table(
				['Setting', 'Before', 'Applied', 'Restored', 'Status'],
				m.changes.map((c) => [
					`<td>${esc(c.setting)}</td>`,
					`<td class="mono">${esc(c.before)}</td>`,
					`<td class="mono">${esc(c.applied)}</td>`,
					`<td class="mono">${esc(c.restored)}${c.note ? `<div class="note">${esc(c.note)}</div>` : ''}</td>`,
					`<td><span class="badge ${STATUS_CLASS[c.status] ?? 'muted'}">${esc(c.status)}</span></td>`,
				]),
				'changes',
			)}</section>`,
		);
	if (m.blacklisted.length || m.skipped.length || m.changes.length)
		sections.push(
			`<section class="grid2"><div class="card"><h2>Blacklisted ranges <small>${m.blacklisted.length}</small></h2>${
				m.blacklisted.length
					? `<ul class="chips">${m.blacklisted.map((b) => `<li class="mono">${esc(b)}</li>`).join('')}</ul>`
					: '<p class="empty">none</p>'
			}</div><div class="card"><h2>Sources left alone <small>${m.skipped.length}</small></h2>${
				m.skipped.length
					? table(
							['Source', 'Why'],
							m.skipped.map((s) => [`<td class="mono">${esc(s.source)}</td>`, `<td>${esc(s.reason)}</td>`]),
						)
					: '<p class="empty">none</p>'
			}</div></section>`,
		);
	if (m.events)
		sections.push(
			`<section class="card"><h2>Events <small>${m.events.length}</small></h2>${
				m.events.length
					? table(
							['Event', 'Type', 'Start (UTC)', 'End (UTC)', 'Peak', 'Status'],
							m.events.map((e) => [
								`<td class="mono">${esc(e.id)}</td>`,
								`<td>${esc(e.type)}</td>`,
								`<td class="mono">${esc(e.start)}</td>`,
								`<td class="mono">${esc(e.end)}</td>`,
								`<td>${esc(formatBps(e.maxBps))}</td>`,
								`<td><span class="badge ${e.status === 'ongoing' ? 'bad' : 'muted'}">${esc(e.status)}</span></td>`,
							]),
						)
					: '<p class="empty">no events in this period</p>'
			}</section>`,
		);
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>${esc(m.title)}</title>
<style>${CSS}</style></head>
<body><main>
<header><div><h1>${esc(m.title)}</h1><p class="sub">${esc(m.subtitle)} · generated ${esc(m.generatedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</p></div>${
		m.outcome ? `<span class="badge big ${outcomeClass}">${esc(m.outcome)}</span>` : ''
	}</header>
${m.error ? `<p class="error">${esc(m.error)}</p>` : ''}${kpis ? `<section class="kpis">${kpis}</section>` : ''}
${sections.join('\n')}
<footer>Security Service runbooks · times in UTC · self-contained report (no external resources)</footer>
</main></body></html>
`;
}

const CSS = `
:root{--bg:#f6f7f9;--card:#fff;--fg:#1b1f24;--muted:#5f6b7a;--line:#e3e7ec;--grid:#eceff3;--attack:#d9363e;--clean:#2f7de1;--reported:#e8890c;--ok:#16794c;--okbg:#e3f5ec;--warn:#8a5a00;--warnbg:#fff3d6;--bad:#b42318;--badbg:#fde8e7;--chip:#eef1f5}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--card:#181c22;--fg:#e6e9ee;--muted:#9aa5b4;--line:#2a3038;--grid:#232931;--attack:#ff6b6b;--clean:#5aa2ff;--reported:#ffb347;--ok:#5fd39a;--okbg:#12301f;--warn:#f5c46b;--warnbg:#3a2e12;--bad:#ff8a80;--badbg:#3d1715;--chip:#222831}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:28px 24px 40px}
header{display:flex;justify-content:space-between;align-items:flex-start;gap:16px;margin-bottom:20px}
h1{font-size:26px;line-height:1.2;margin:0 0 4px}
h2{font-size:16px;margin:0 0 12px}
h2 small{color:var(--muted);font-weight:500;margin-left:6px}
.sub{color:var(--muted);margin:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:18px 20px;margin-bottom:16px}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:12px;margin-bottom:16px}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:14px 16px}
.kpi .label{color:var(--muted);font-size:13px;text-transform:uppercase;letter-spacing:.04em}
.kpi .value{font-size:28px;font-weight:650;font-variant-numeric:tabular-nums}
.kpi .value.small{font-size:20px;padding:5px 0}
.kpi .hint{color:var(--muted);font-size:13px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.grid2 .card{margin-bottom:0}
.grid2{margin-bottom:16px}
.chart{width:100%;height:auto;display:block}
.chart .grid{stroke:var(--grid);stroke-width:1}
.chart .axis{stroke:var(--muted);stroke-width:1}
.chart .tick{fill:var(--muted);font-size:12px;font-variant-numeric:tabular-nums}
.chart .line{fill:none;stroke-width:2.2;stroke-linejoin:round}
.chart .area{opacity:.16}
.chart .marker line{stroke:var(--muted);stroke-width:1.2;stroke-dasharray:4 4}
.chart .marker text{fill:var(--fg);font-size:12.5px;font-weight:600}
.chart .marker.start line{stroke:var(--attack)}.chart .marker.start text{fill:var(--attack)}
.chart .marker.mitigated line{stroke:var(--reported)}.chart .marker.mitigated text{fill:var(--reported)}
.chart .marker.reverted line{stroke:var(--ok)}.chart .marker.reverted text{fill:var(--ok)}
.chart.narrow{display:none}
.legend{display:flex;flex-wrap:wrap;gap:8px 18px;margin-top:8px;color:var(--muted);font-size:13px}
.key i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.key i.dash{background:none;border-left:2px dashed var(--muted);border-radius:0;width:2px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px}
th{text-align:left;color:var(--muted);font-weight:600;font-size:12.5px;text-transform:uppercase;letter-spacing:.03em;border-bottom:1px solid var(--line);padding:6px 10px 8px}
td{border-bottom:1px solid var(--line);padding:8px 10px;vertical-align:top}
tr:last-child td{border-bottom:none}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.changes td:first-child{min-width:180px}
.note{color:var(--muted);font-size:12.5px;margin-top:2px}
.badge{display:inline-block;padding:2px 9px;border-radius:999px;font-size:12.5px;font-weight:600;white-space:nowrap;background:var(--chip);color:var(--muted)}
.badge.big{font-size:15px;padding:5px 14px}
.badge.ok{background:var(--okbg);color:var(--ok)}.badge.warn{background:var(--warnbg);color:var(--warn)}.badge.bad{background:var(--badbg);color:var(--bad)}
.chips{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:8px}
.chips li{background:var(--chip);border-radius:8px;padding:4px 10px}
.empty{color:var(--muted);margin:0}
.note{color:var(--muted);font-size:13px;margin:8px 0 0}
.error{background:var(--badbg);color:var(--bad);border-radius:10px;padding:10px 14px}
footer{color:var(--muted);font-size:12.5px;text-align:center;margin-top:24px}
@media (max-width:700px){main{padding:16px 12px 28px}h1{font-size:21px}header{flex-direction:column;gap:8px}.grid2{grid-template-columns:1fr}.card{padding:14px}
.kpis{grid-template-columns:1fr 1fr;gap:10px}.kpi{padding:12px}.kpi .value{font-size:22px}.kpi .label{font-size:11.5px}
.chart.wide{display:none}.chart.narrow{display:block}.chart .tick{font-size:14px}.chart .marker text{font-size:14px}
table,tbody,tr,td{display:block;width:100%}thead{display:none}tr{border-bottom:1px solid var(--line);padding:8px 0}tr:last-child{border-bottom:none}
td{border:none;padding:3px 0}td::before{content:attr(data-label);display:block;color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.03em}
.changes td:first-child{font-weight:600}}
`;

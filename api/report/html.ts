import type { ReportModel, SeriesKind } from './model';
import { CSS } from './style';

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
/** Right and bottom margins of both layouts. */
const R = 36;
const B = 40;
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
	const T = 56;
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

	const markers = markerLabels(m, z, X);

	return `<svg class="chart ${z.cls}" viewBox="0 0 ${W} ${H}" role="img" aria-label="Traffic over time with markers" preserveAspectRatio="xMidYMid meet">
<title>Traffic over time (UTC)</title>${grid}<line class="axis" x1="${L}" x2="${W - R}" y1="${f(Y(0))}" y2="${f(Y(0))}"/>${xt}${series}${markers}</svg>`;
}

/** Marker lines with their labels in up to three rows, so close markers do not overlap. */
function markerLabels(m: ReportModel, z: ChartSize, X: (t: number) => number): string {
	const { W, H, L } = z;
	const f = (n: number) => n.toFixed(1);
	const rows: number[] = [];
	return m.markers
		.map((k) => {
			const x = X(k.at);
			const w = k.label.length * z.charW + 10;
			const anchor = x < L + w / 2 ? 'start' : x > W - R - w / 2 ? 'end' : 'middle';
			// The label's extent as drawn: a label at the left edge runs right from its line, at the right edge left.
			const left = anchor === 'start' ? x : anchor === 'end' ? x - w : x - w / 2;
			let row = rows.findIndex((end) => end < left);
			if (row === -1) row = rows.length < 3 ? rows.length : 0;
			rows[row] = left + w;
			const ty = 16 + row * 15;
			return `<g class="marker ${k.kind}" data-kind="${k.kind}"><line x1="${f(x)}" x2="${f(x)}" y1="${ty + 4}" y2="${H - B}"/><text x="${f(x)}" y="${ty}" text-anchor="${anchor}">${esc(k.label)}</text><title>${esc(`${k.label} at ${hhmmss(k.at)} UTC`)}</title></g>`;
		})
		.join('');
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

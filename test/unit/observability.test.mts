/**
 * Observability pieces that need no server: the search attributes every dev-server start registers, the `secsvc
 * list` visibility query, the metrics configuration, the API metrics listener's labels, and the HTML report
 * (escaping, self-containment, what the chart is made of).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderReportHtml, formatBps } from '../../api/report/html.ts';
import {
	periodReportModel,
	REPORT_NOTES,
	runbookReportModel,
	SERIES_LABEL,
	type RunbookResultLike,
} from '../../api/report/model.ts';
import { ConfigError, loadConfig } from '../../worker/src/process/config.mts';
import { listQuery, ListFilterError } from '../../workflows/attackResponse/client.mts';
import { parsePrometheus } from '../helpers/prometheus.mts';
import { SEARCH_ATTRIBUTES, searchAttributeArgs } from '../../workflows/attackResponse/searchAttributes.mts';

const ROOT = new URL('../../', import.meta.url).pathname;

test('scripts/temporal.sh start registers exactly the runbooks search attributes', () => {
	const sh = readFileSync(`${ROOT}scripts/temporal.sh`, 'utf8');
	const given = [...sh.matchAll(/--search-attribute (\w+)=(\w+)/g)].map((m) => `${m[1]}=${m[2]}`).sort();
	assert.deepEqual(
		given,
		Object.entries(SEARCH_ATTRIBUTES)
			.map(([k, t]) => `${k}=${t}`)
			.sort(),
	);
	assert.equal(searchAttributeArgs().length, 2 * Object.keys(SEARCH_ATTRIBUTES).length);
});

test('secsvc list: visibility query from the filters; bad filters name the option', () => {
	assert.equal(listQuery(), "WorkflowType = 'attackResponse' AND ExecutionStatus != 'ContinuedAsNew'");
	assert.equal(
		listQuery({ site: '20001', phase: 'waiting', running: true }),
		"WorkflowType = 'attackResponse' AND SecsvcSite = '20001' AND SecsvcPhase = 'waiting' AND ExecutionStatus = 'Running'",
	);
	assert.equal(
		listQuery({ phase: 'mitigation' }),
		"WorkflowType = 'attackResponse' AND SecsvcPhase IN ('tightening', 'blacklisting', 'rate-limiting', 'waiting') AND ExecutionStatus != 'ContinuedAsNew'",
	);
	assert.throws(
		() => listQuery({ site: "1' OR '1'='1" }),
		(e: Error) => e instanceof ListFilterError && /--site: must be a site id/.test(e.message),
	);
	assert.throws(() => listQuery({ phase: 'mitigating' }), /--phase: must be one of .*done or mitigation/);
});

test('metrics address: SECSVC_METRICS_ADDRESS or metrics.address, off when unset, host:port checked', () => {
	const base = { SECSVC_BASE_URL: 'http://127.0.0.1:1', SECSVC_APP_ID: 'a', SECSVC_SECRET: 's' };
	assert.equal(loadConfig({ ...base }).metrics, undefined);
	assert.deepEqual(loadConfig({ ...base, SECSVC_METRICS_ADDRESS: '127.0.0.1:9464' }).metrics, {
		address: '127.0.0.1:9464',
	});
	assert.throws(
		() => loadConfig({ ...base, SECSVC_METRICS_ADDRESS: 'http://127.0.0.1:9464/metrics' }),
		(e: Error) =>
			e instanceof ConfigError && /metrics\.address \(SECSVC_METRICS_ADDRESS\): must be host:port/.test(e.message),
	);
});

test('Prometheus text parsing (labels with escapes, _total, histograms)', () => {
	const rows = parsePrometheus(
		'# HELP x\n# TYPE x counter\nsecsvc_api_requests_total{operation="a.b",outcome="0",q="x\\"y"} 3\nsecsvc_runbook_time_to_detect_sum 1.5\n',
	);
	assert.deepEqual(rows, [
		{ name: 'secsvc_api_requests_total', labels: { operation: 'a.b', outcome: '0', q: 'x\\"y' }, value: 3 },
		{ name: 'secsvc_runbook_time_to_detect_sum', labels: {}, value: 1.5 },
	]);
});

const t0 = Date.parse('2026-01-01T10:00:00Z');
const at = (s: number) => new Date(t0 + s * 1000).toISOString();
const result: RunbookResultLike = {
	outcome: 'reverted',
	site_id: '<img src=x onerror=alert(1)>',
	eventId: 'E1',
	timeToDetectSeconds: 1.5,
	timeToMitigateSeconds: 2.5,
	timeToRevertSeconds: 3,
	changes: [
		{
			id: 'a',
			kind: 'blacklistAdd',
			what: 'IP blacklist of <dp>',
			before: [],
			after: ['203.0.113.5-203.0.113.6'],
			status: 'restored',
			appliedAt: at(3),
		},
		{
			id: 'b',
			kind: 'switch',
			what: 'switch p_auth',
			before: 0,
			after: 1,
			status: 'conflict',
			live: 0,
			appliedAt: at(3),
		},
	],
	skipped: [{ source: 'dp:198.51.100.2', reason: 'protected range' }],
	audit: [{ at: at(2), step: 'signal', what: 'approve', why: 'ok', result: 'alice' }],
	marks: {
		eventStart: t0 / 1000,
		startedAt: at(1.5),
		mitigatedAt: at(2.5),
		attackEndedAt: at(10),
		revertedAt: at(13),
		decision: 'approved',
	},
	traffic: [0, 1, 2, 3].map((i) => ({ at: at(4 + i * 2), underAttack: i < 3, bps: 5e8 })),
	eventTraffic: { bps: { attack: [[t0 / 1000, 2e9]], clean: [[t0 / 1000, 2e8]] } },
};

test('runbook report model: series, markers in time order, changes, approval', () => {
	const m = runbookReportModel(result, at(20));
	// issue 40: the event's series had one sample each (read as the event began): said in words, never drawn as a
	// flat line; the polls are labelled as what they are (the attack's size the service reports, before mitigation).
	assert.deepEqual(
		m.series.map((s) => [s.kind, s.points.length]),
		[['reported', 4]],
	);
	assert.deepEqual(m.notes, [
		`${SERIES_LABEL.attack}: 1 sample when the runbook read it (the event had just begun): not drawn.`,
		`${SERIES_LABEL.clean}: 1 sample when the runbook read it (the event had just begun): not drawn.`,
		REPORT_NOTES.reported,
	]);
	assert.doesNotMatch(SERIES_LABEL.reported, /reaching the site/);
	assert.match(SERIES_LABEL.reported, /before mitigation/);
	const twoSamples = runbookReportModel(
		{
			...result,
			eventTraffic: {
				bps: {
					attack: [
						[t0 / 1000, 2e9],
						[t0 / 1000 + 60, 3e9],
					],
				},
			},
		},
		at(20),
	);
	assert.deepEqual(
		twoSamples.series.map((s) => [s.kind, s.points.length]),
		[
			['attack', 2],
			['reported', 4],
		],
	);
	assert.deepEqual(
		m.series[0].points.map((p) => p[1]),
		[5e8, 5e8, 5e8, 0],
		'no attack reported → 0',
	);
	assert.deepEqual(
		m.markers.map((k) => k.kind),
		['start', 'detected', 'mitigated', 'over', 'reverted'],
	);
	assert.deepEqual(m.blacklisted, ['203.0.113.5-203.0.113.6']);
	assert.deepEqual(m.approval, { decision: 'approved', by: 'alice', at: at(2), reason: 'ok' });
	assert.equal(m.changes[1].restored, 'kept operator value 0');
});

test('HTML report: escaped, self-contained, light and dark, one chart per layout with every point and marker', () => {
	const html = renderReportHtml(runbookReportModel(result, at(20)));
	assert.ok(!html.includes('<img'), 'text is escaped');
	assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
	assert.doesNotMatch(html, /<script|<link|<img|<iframe|@import|url\(|<[^>]+\s(src|href)=/i);
	assert.match(html, /@media \(prefers-color-scheme:dark\)/);
	assert.match(html, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
	for (const cls of ['wide', 'narrow']) {
		const svg = new RegExp(`<svg class="chart ${cls}"[\\s\\S]*?</svg>`).exec(html)?.[0] ?? '';
		assert.equal((svg.match(/<circle data-kind=/g) ?? []).length, 4, cls);
		assert.equal((svg.match(/<g class="marker /g) ?? []).length, 5, cls);
	}
	assert.equal((html.match(/<p class="note">/g) ?? []).length, 3, 'the notes under the chart');
	assert.equal(formatBps(2.5e9), '2.5 Gbps');
	assert.equal(formatBps(0), '0');
});

test('period report (attack report playbook): events table and their start/end markers', () => {
	const m = periodReportModel(
		{
			site_id: '20001',
			period: { start_time: '2026-01-01 00:00:00', end_time: '2026-01-02 00:00:00' },
			generatedAt: at(0),
			totals: { events: 2, ongoing: 1, maxBps: 2e9 },
			events: [
				{
					alert_id: 'E1',
					attack_type: 'UDP',
					start_time: t0 / 1000,
					end_time: t0 / 1000 + 60,
					max_bps: 2e9,
					status: 0,
				},
				{ alert_id: 'E2', attack_type: 'SYN', start_time: t0 / 1000 + 120, end_time: 0, max_bps: 1e9, status: 1 },
			],
		},
		{ bps: { attack: [[t0 / 1000 + 120, 1e9]], clean: [[t0 / 1000 + 120, 1e8]] } },
	);
	assert.deepEqual(
		m.markers.map((k) => k.label),
		['attack start E1', 'attack over E1', 'attack start E2'],
	);
	assert.deepEqual(
		m.events?.map((e) => e.end),
		['2026-01-01T10:01:00Z', 'ongoing'],
	);
	assert.match(renderReportHtml(m), /<h2>Events <small>2<\/small><\/h2>/);
});

test('runbook report from a result read through the HTTP API shorthand (empty lists become null)', () => {
	const shorthand = JSON.parse(
		JSON.stringify({
			...result,
			skipped: null,
			traffic: null,
			changes: [{ ...result.changes[0], before: null, after: null }],
		}),
	);
	const html = renderReportHtml(runbookReportModel(shorthand, at(20)));
	assert.match(html, /Sources left alone <small>0<\/small>/);
	assert.match(html, /Blacklisted ranges <small>0<\/small>/);
});

test('HTML report: marker labels close together never overlap in a row (a label at the left edge runs right)', () => {
	const close = runbookReportModel(
		{
			...result,
			// the demo's timing: detected 3 s and mitigated 6 s after the start, over at 50 s, reverted at 60 s
			marks: {
				...result.marks,
				eventStart: t0 / 1000,
				startedAt: at(3),
				mitigatedAt: at(6),
				attackEndedAt: at(50),
				revertedAt: at(60),
			},
			traffic: [0, 5, 10, 50].map((s) => ({ at: at(4 + s), underAttack: true, bps: 1e8 })),
		},
		at(70),
	);
	const html = renderReportHtml(close);
	for (const [cls, charW] of [
		['wide', 7],
		['narrow', 8],
	] as const) {
		const svg = new RegExp(`<svg class="chart ${cls}"[\\s\\S]*?</svg>`).exec(html)?.[0] ?? '';
		const labels = [
			...svg.matchAll(
				/<g class="marker [^"]+"[^>]*><line[^>]*\/><text x="([\d.]+)" y="(\d+)" text-anchor="(\w+)">([^<]+)</g,
			),
		].map((m) => {
			const x = Number(m[1]);
			const w = m[4].length * charW;
			const left = m[3] === 'start' ? x : m[3] === 'end' ? x - w : x - w / 2;
			return { y: m[2], left, right: left + w, text: m[4] };
		});
		assert.equal(labels.length, 5, cls);
		for (const a of labels)
			for (const b of labels)
				if (a !== b && a.y === b.y)
					assert.ok(a.right <= b.left || b.right <= a.left, `${cls}: "${a.text}" and "${b.text}" overlap`);
	}
});

/**
 * A runbook's carried state stays bounded however long it waits (docs/workflows/long-waits.md): the audit keeps
 * its first and latest entries with one "omitted" entry between them; the plan's continue-as-new threshold is
 * validated (field and rule named).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendAudit, AUDIT_HEAD, AUDIT_MAX } from '../../workflows/attackResponse/context.mts';
import type { AuditEntry, RunbookState } from '../../api/runbook/contract.ts';
import { parsePlan, PlanError } from '../../api/runbook/plan.ts';
import { patienceDelayMs } from '../../workflows/attackResponse/patience.mts';

const entry = (i: number): AuditEntry => ({
	at: new Date(i * 1000).toISOString(),
	step: 'waiting',
	what: `entry ${i}`,
	why: 'test',
});

test('the audit keeps its first and latest entries; one entry counts what was left out', () => {
	const audit: AuditEntry[] = [];
	const state = { blindSeconds: 0 } as RunbookState;
	for (let i = 0; i < AUDIT_MAX; i++) appendAudit(audit, state, entry(i));
	assert.equal(audit.length, AUDIT_MAX);
	assert.equal(state.auditOmitted, undefined, 'nothing left out up to the bound');
	const total = 5 * AUDIT_MAX + 17;
	for (let i = AUDIT_MAX; i < total; i++) appendAudit(audit, state, entry(i));
	assert.equal(audit.length, AUDIT_MAX);
	const omitted = total - (AUDIT_MAX - 1);
	assert.equal(state.auditOmitted, omitted);
	assert.deepEqual(
		audit.slice(0, AUDIT_HEAD).map((a) => a.what),
		Array.from({ length: AUDIT_HEAD }, (_, i) => `entry ${i}`),
		'the head is kept',
	);
	assert.equal(audit[AUDIT_HEAD].what, `${omitted} audit entries omitted`);
	assert.equal(audit[AUDIT_HEAD].at, entry(AUDIT_HEAD).at, 'the marker carries the time of the first entry left out');
	const tail = audit.slice(AUDIT_HEAD + 1).map((a) => a.what);
	assert.deepEqual(
		tail,
		Array.from({ length: AUDIT_MAX - AUDIT_HEAD - 1 }, (_, i) => `entry ${total - (AUDIT_MAX - AUDIT_HEAD - 1) + i}`),
		'the latest entries are kept, in order',
	);
	assert.ok(JSON.stringify(audit).length < 200_000);
});

test('plan.execution.continueAsNewAfterEvents: default 2000, bounds named', () => {
	const base = { site_id: '20001', customer_id: '10001' };
	assert.equal(parsePlan(base).execution.continueAsNewAfterEvents, 2000);
	assert.equal(
		parsePlan({ ...base, execution: { continueAsNewAfterEvents: 60 } }).execution.continueAsNewAfterEvents,
		60,
	);
	for (const [v, rule] of [
		[59, 'must be at least 60'],
		[10_001, "must be at most 10000 (below Temporal's warning at 10,240 events)"],
		[100.5, 'must be an integer number of history events'],
		['2000', 'must be an integer number of history events'],
	] as const) {
		assert.throws(
			() => parsePlan({ ...base, execution: { continueAsNewAfterEvents: v } }),
			(e: unknown) =>
				e instanceof PlanError &&
				e.issues.some((i) => i.field === 'execution.continueAsNewAfterEvents' && i.rule === rule),
			`${v}`,
		);
	}
});

test('patience with the API: quick retries in a short outage, a bounded number of attempts in a day-long one', () => {
	// Attempts that fail at once (the worst case for history size): the loop of withPatience, with its clock.
	const attempts = (outageMs: number) => {
		const delays: number[] = [];
		for (let t = 0, n = 0; t < outageMs; n++) {
			const d = patienceDelayMs(n, t);
			delays.push(d);
			t += d;
		}
		return delays;
	};
	assert.deepEqual(
		attempts(60_000).map((d) => d / 1000),
		[1, 2, 4, 8, 16, 30],
		'a 60 s outage: retried after 1, 2, 4, 8, 16, 30 s (as before)',
	);
	const day = attempts(86_400_000);
	assert.equal(
		Math.max(...day.filter((_, i) => day.slice(0, i).reduce((a, b) => a + b, 0) < 600_000)),
		30_000,
		'at most 30 s apart for 10 minutes',
	);
	assert.equal(day.at(-1), 300_000, 'then at most 5 min apart');
	// Each attempt costs ~11 history events (a regular activity's 3, a timer's 2, two workflow tasks' 6): the old
	// 30 s ceiling made ~2,900 attempts (~32,000 events) in 24 h; Temporal terminates a run at 51,200.
	assert.ok(day.length > 250 && day.length < 340, `${day.length} attempts in 24 h`);
	assert.ok(day.length * 11 < 4_000);
});

/**
 * Issue 39 item 5, the nodes' side of a return, against a real dev server's HTTP API (the nodes' only way to
 * Temporal) with an in-process worker and the simulator: after a runbook reverted, the trigger's `runbook_return`
 * (nodes/SecurityServiceTrigger/returns.ts) says the next attack on the site is a return within the last plan's
 * hold-down, names that runbook and the top sources it already blocked; outside the hold-down, on a site without a
 * runbook and with Temporal out of reach it says so. The Runbook node's Start "Re-Arm From the Last Plan"
 * (start.operation.ts) starts the last plan, and the runbook it starts re-arms (pre-blocks the last sources).
 * That runbook writes its plan in one group (a re-arm) and its history replays. The node's n8n context is a
 * stand-in for its parameters only; every Temporal exchange is real.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@temporalio/worker';
import { runbookSinks } from '../../worker/src/process/runbookMetrics.mts';
import type { IDataObject } from 'n8n-workflow';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { pathSegment } from '../../api/limits.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { holds } from '../../workflows/coordinator/client.mts';
import { entryKey } from '../../workflows/attackResponse/ownership.mts';
import { freePort } from '../../demo/stack.mts';
import { runbookReturn } from '../../nodes/SecurityServiceTrigger/returns.ts';
import { execute as startOperation } from '../../nodes/SecurityServiceRunbook/actions/runbook/start.operation.ts';
import { NO_SHORTHAND } from '../../nodes/SecurityServiceRunbook/transport/http.ts';
import type { Env } from '../../nodes/SecurityServiceRunbook/actions/common/types.ts';
import type { TemporalHttp } from '../../nodes/SecurityServiceRunbook/transport/lastRun.ts';
import { env, useDevServer, plan, startInProcessWorker, startSim, uniqueQueue, waitFor, type Ids } from './helpers.mts';

let httpBase: string;
/** A local activity's marker data (the SDK core's, snake_case). */
type LocalMarker = {
	seq: number;
	activity_type: string;
	original_schedule_time: { seconds: number | string; nanos: number };
	complete_time: { seconds: number | string; nanos: number };
};

useDevServer({
	extraArgs: async () => {
		const port = await freePort();
		httpBase = `http://127.0.0.1:${port}`;
		return ['--http-port', String(port)];
	},
});

/** The nodes' Temporal exchanges, over fetch instead of n8n's request helper (same URLs, query and header). */
function temporalHttp(base: string): TemporalHttp {
	const workflowsUrl = `${base}/api/v1/namespaces/default/workflows`;
	return {
		workflowsUrl,
		wfUrl: (id) => `${workflowsUrl}/${pathSegment(id)}`,
		async call(method, url, body, qs) {
			const u = new URL(url);
			for (const [k, v] of Object.entries(qs ?? {})) u.searchParams.set(k, String(v));
			const r = await fetch(u, {
				method,
				headers: { 'content-type': 'application/json', ...NO_SHORTHAND },
				...(body ? { body: JSON.stringify(body) } : {}),
				signal: AbortSignal.timeout(10_000),
			});
			const text = await r.text();
			return { status: r.status, body: text ? (JSON.parse(text) as IDataObject) : {} };
		},
	};
}

/** The Runbook node's Env for one item: its parameters from `params`, Temporal over fetch. */
function nodeEnv(params: Record<string, unknown>): Env {
	const t = temporalHttp(httpBase);
	const fail = (field: string, rule: string): never => {
		throw new Error(`${field}: ${rule}`);
	};
	const ctx = {
		getNodeParameter: (name: string, _i: number, fallback?: unknown) => (name in params ? params[name] : fallback),
		getExecutionId: () => 'test-exec',
	};
	return {
		ctx: ctx as unknown as Env['ctx'],
		i: 0,
		ns: 'default',
		...t,
		send: async (method, url, body) => (await t.call(method, url, body)).body,
		payloadKey: '',
		fail,
		text: (_field, v) => String(v ?? ''),
	};
}

const ip = (n: number) => `203.0.113.${n}`;

test('the trigger names a return and the runbook it follows; the Runbook node re-arms from the last plan', async () => {
	const s = await startSim(45);
	const ids: Ids = s.sim.firstIds();
	const queue = uniqueQueue('node-returns');
	const worker = await startInProcessWorker(env, s.url, queue);
	const t = temporalHttp(httpBase);
	const first = plan(ids, { cooldownSeconds: 1, ipAuth: undefined, switches: [], holdDown: { seconds: 600 } });
	try {
		assert.deepEqual(await runbookReturn(t, ids.site_id, [ip(10)], Date.now()), {
			checked: true,
			is_return: false,
			last_runbook: null,
			overlap: [],
		});
		const a1 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(20) }] });
		const h1 = await startAttackResponse(env.client, queue, first);
		await waitFor('run 1 waiting', async () => (await h1.query(stateQuery)).phase === 'waiting', 20_000);
		s.sim.stopAttack(a1.id);
		const r1 = (await h1.result()) as AttackResponseResult;
		assert.equal(r1.outcome, 'reverted');
		const revertedMs = Date.parse(r1.marks?.revertedAt ?? '');

		// They come back from .10 (blocked last time) and .30 (new).
		const ret = await runbookReturn(t, ids.site_id, [ip(10), ip(30)], Date.now());
		const run1 = (await h1.describe()).runId;
		assert.equal(ret.is_return, true);
		assert.equal(ret.hold_down_seconds, 600, "the last plan's hold-down");
		assert.deepEqual(ret.overlap, [ip(10)]);
		assert.equal(ret.overlap_share, 0.5);
		const last = ret.last_runbook as IDataObject;
		assert.deepEqual([last.workflow_id, last.run_id, last.outcome, last.returns], [h1.workflowId, run1, 'reverted', 0]);
		assert.deepEqual((last.blocked_entries as string[]).sort(), [ip(10), ip(20)]);
		// Past the hold-down (the same last runbook, named, but no return).
		const late = await runbookReturn(t, ids.site_id, [ip(10)], revertedMs + 601_000);
		assert.deepEqual([late.checked, late.is_return, (late.last_runbook as IDataObject).run_id], [true, false, run1]);
		// Temporal out of reach: not checked, and why (the trigger still emits the item).
		const down = await runbookReturn(temporalHttp(`http://127.0.0.1:${await freePort()}`), ids.site_id, [], Date.now());
		assert.equal(down.checked, false);
		assert.match(String(down.why), /the last runbook could not be read/);

		// The Runbook node: a site without a finished runbook is refused by name, nothing started.
		await assert.rejects(
			startOperation(nodeEnv({ planSource: 'lastRun', rearmSite: '99999', taskQueue: queue, dryRun: false })),
			/^Error: Site ID: site 99999 has no finished runbook to re-arm from/,
		);
		const a2 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(30) }] });
		const [out] = await startOperation(
			nodeEnv({ planSource: 'lastRun', rearmSite: ids.site_id, taskQueue: queue, dryRun: false }),
		);
		assert.equal(out.json.status, 'started');
		const rearm = out.json.rearm as IDataObject;
		assert.deepEqual([rearm.fromRunId, rearm.withinHoldDown, rearm.holdDownSeconds], [run1, true, 600]);
		const h2 = env.client.workflow.getHandle(String(out.json.workflowId));
		await waitFor('run 2 waiting', async () => (await h2.query(stateQuery)).phase === 'waiting', 20_000).catch(
			async (e: unknown) => {
				console.log(JSON.stringify(await h2.query(stateQuery)), JSON.stringify(await h2.describe()));
				throw e;
			},
		);
		const st2 = await h2.query(stateQuery);
		assert.deepEqual([st2.rearm?.from, st2.rearm?.returns, st2.rearm?.preBlocked], [run1, 1, 2]);
		// Its entries are held by it (one owner per entry), the new source's too.
		const held = new Map((await holds(env.client, ids.site_id)).map((x) => [x.key, x.owner]));
		for (const e of [ip(10), ip(20), ip(30)])
			assert.equal(held.get(entryKey(ids.domain_port_id, e)), h2.workflowId, `${e} held by the re-arm`);
		s.sim.stopAttack(a2.id);
		const r2 = (await h2.result()) as AttackResponseResult;
		assert.equal(r2.outcome, 'reverted');
		// The re-arm wrote its plan in one group (rearm.mts REARM_FAST_PATCH): its history replays.
		const history = await h2.fetchHistory();
		// Grouped, the items wait for the mode's write to complete; at once, they are scheduled beside it.
		const events = history.events ?? [];
		const named = (n: string) =>
			events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === n);
		const mode = named('detection.setMode');
		const modeDone = events.findIndex(
			(e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(events[mode]?.eventId),
		);
		assert.ok(mode >= 0 && named('detection.setPolicy') < modeDone, 'the plan written at once');
		// The last run is asked for beside the settings' hold, not after the snapshot: since `hold-beside-snapshot` all
		// three are local activities, numbered (seq) in the order the workflow asked for them. Not by their times: core
		// stamps original_schedule_time with the worker's clock and complete_time as workflow time + the activity's
		// run time (local_activity_state_machine.rs); under load the first ran ahead of the second by more than the
		// hold's run time, and "scheduled before the hold completed" failed for a lookup asked before the hold.
		const local = (n: string) =>
			events
				.map((e) => e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data)
				.map((d) => (d ? (JSON.parse(Buffer.from(d).toString()) as LocalMarker) : undefined))
				.find((m) => m?.activity_type === n);
		const [claim, lookup, read] = [local('coordination.claim'), local('runbook.lastRun'), local('detection.getPolicy')];
		assert.ok(claim && lookup && read, `the local activities recorded: ${JSON.stringify({ claim, lookup, read })}`);
		assert.ok(
			lookup.seq < read.seq && claim.seq < read.seq,
			`the lookup and the hold asked before the snapshot's reads: ${JSON.stringify({ claim, lookup, read })}`,
		);
		// Its entries' hold by its write activity, beside their reads (ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH): one
		// claim marker (the settings'), no claim activity, and the one write activity asked with every entry's key.
		const claims = events.filter((e) => {
			const d = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
			return d && (JSON.parse(Buffer.from(d).toString()) as LocalMarker).activity_type === 'coordination.claim';
		});
		assert.deepEqual(
			[claims.length, named('coordination.claim')],
			[1, -1],
			'the settings held locally, no other claim',
		);
		const writes = events.filter(
			(e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runbook.writeStepsHeld',
		);
		const input = writes[0]?.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
		const hold =
			input && (JSON.parse(Buffer.from(input).toString()) as { hold?: { keys: Record<string, string> } }).hold;
		assert.deepEqual(
			[writes.length, Object.values(hold?.keys ?? {}).sort()],
			[1, [ip(10), ip(20), ip(30)].map((e) => entryKey(ids.domain_port_id, e)).sort()],
			'the plan in one write activity that holds the entries',
		);
		await Worker.runReplayHistory(
			{ workflowBundle: await workflowBundle(), sinks: runbookSinks(undefined) },
			history,
			String(out.json.workflowId),
		);
		// Its start carried the last plan as it was sent.
		const again = await runbookReturn(t, ids.site_id, [ip(30)], Date.now());
		assert.deepEqual([again.is_return, (again.last_runbook as IDataObject).returns], [true, 1]);
		assert.deepEqual(again.overlap, [ip(30)]);
	} finally {
		await worker.shutdown();
		await s.close();
	}
});

/**
 * The fleet watch's batch activity (workflows/fleet/activities.mts) under the request budget, against the simulator:
 * a batch whose calls get no turn before its time budget ends returns the sites it did not send as `deferred` and
 * says `budgetHeld` (the watcher then follows its tick at once: workflows/fleet/fleetWatch.mts); a batch that ran out
 * of time with the budget not involved does not say it (the watcher keeps its grid), and nothing it did not send
 * reached the service.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createClient } from '../../api/client.ts';
import { RateBudget } from '../../api/rateBudget.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createFleetActivities } from '../../workflows/fleet/activities.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { FLEET_CHECK_ACTIVITY } from '../../workflows/fleet/shared.mts';
import '../helpers/started.mts'; // a failing test prints what this file started

const APP = { appId: 'batch-budget-app', secret: 'batch-budget-secret-1' };
let sim: Awaited<ReturnType<typeof startSimulator>>;
const transport = createUndiciTransport();
// the simulator's fleet numbers its sites from 210001
const sites = Array.from({ length: 12 }, (_, i) => String(210001 + i));

before(async () => {
	sim = await startSimulator({ ...APP, seed: 9, fleet: { customers: 1, sitesPerCustomer: 12 } });
});
after(async () => {
	await sim.close();
	await transport.close();
});

const batch = (rateBudget?: RateBudget) =>
	createFleetActivities(
		createClient({
			baseUrl: sim.url,
			transport,
			credentials: { ...APP, tokenKind: 'app' },
			retries: 0,
			...(rateBudget ? { rateBudget } : {}),
		}),
	)[FLEET_CHECK_ACTIVITY];

test('a batch the request budget holds back: the rest deferred, budgetHeld, nothing of it sent', async () => {
	// 4 requests/s, burst 1: in 600 ms about three checks (and the token request) get a turn
	const budget = new RateBudget({ app: { rps: 4, burst: 1 } });
	const before = sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length;
	const r = await batch(budget)({ site_ids: sites, concurrency: 4, budgetMs: 600 });
	const sent = sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length - before;
	assert.equal(r.budgetHeld, true, JSON.stringify(r));
	assert.ok(r.deferred.length >= 6, `deferred ${r.deferred.length} of 12`);
	assert.equal(sent, 12 - r.deferred.length, 'every site not deferred was sent once, no deferred one was');
	assert.deepEqual(Object.keys(r.checkedAt ?? {}).sort(), sites.filter((s) => !r.deferred.includes(s)).sort());
});

test('a batch with no budget: every site checked; out of time on a slow service: deferred, budgetHeld not said', async () => {
	const r = await batch()({ site_ids: sites, concurrency: 4, budgetMs: 10_000 });
	assert.deepEqual([r.deferred, r.budgetHeld], [[], undefined]);
	assert.equal(Object.keys(r.checkedAt ?? {}).length, 12);
	// every answer takes 400 ms: one concurrent call per lane, 2 lanes, 600 ms of time
	sim.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'delay', delayMs: 400, count: 12 });
	const slow = await batch()({ site_ids: sites, concurrency: 2, budgetMs: 600 });
	assert.equal(slow.outOfTime, true, JSON.stringify(slow));
	assert.ok(slow.deferred.length >= 6, `deferred ${slow.deferred.length} of 12`);
	assert.equal(slow.budgetHeld, undefined);
});

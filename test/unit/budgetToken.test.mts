/**
 * A call that waits for its request-budget turn takes its access token after the turn, not before: a token at hand
 * when the call was made may expire while it queues, and a call sent with it is refused by the service (then renewed
 * and sent again: a wasted request of the budget and a late mitigation). A turn free at once is taken without a
 * wait (api/rateBudget.ts tryAcquire) and reported like one granted after 0 ms.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createClient, type ClientOptions } from '../../api/client.ts';
import { RateBudget } from '../../api/rateBudget.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import '../helpers/started.mts'; // a failing test prints what this file started

const APP = { appId: 'budget-token-app', secret: 'budget-token-secret-1' };
let sim: Awaited<ReturnType<typeof startSimulator>>;
const transport = createUndiciTransport();
const SITE = '210001'; // the simulator's fleet numbers its sites from 210001

/** A client of the app against the simulator, renewing its token 1 s before the end, under `rateBudget`. */
const budgetClient = (rateBudget: RateBudget, o: Partial<ClientOptions> = {}) =>
	createClient({
		baseUrl: sim.url,
		transport,
		credentials: { ...APP, tokenKind: 'app' },
		expirySkewSeconds: 1,
		rateBudget,
		...o,
	});

before(async () => {
	// 3 s tokens; the client renews 1 s before the end, so a token is at hand for 2 s
	sim = await startSimulator({ ...APP, seed: 5, tokenTtl: 3, fleet: { customers: 1, sitesPerCustomer: 1 } });
});
after(async () => {
	await sim.close();
	await transport.close();
});

test('calls queued 0–5 s for their budget turn each send a token that is alive when sent', async () => {
	const client = budgetClient(new RateBudget({ app: { rps: 1, burst: 1 } }));
	await client.call('dashboard.isUnderAttack', { site_id: SITE }); // a token at hand
	const since = sim.sim.requests().at(-1)?.seq ?? 0;
	await Promise.all(Array.from({ length: 5 }, () => client.call('dashboard.isUnderAttack', { site_id: SITE })));
	const sent = sim.sim.requests({ since }).filter((e) => e.opId === 'dashboard.isUnderAttack');
	const expired = sent.filter((e) => (e.tokenLeftMs ?? 1) <= 0);
	assert.equal(sent.length, 5, `each call sent once: ${JSON.stringify(sent.map((e) => [e.status, e.code]))}`);
	assert.deepEqual(
		expired.map((e) => e.tokenLeftMs),
		[],
		'no call sent with a token that expired while it queued',
	);
});

test('a turn free at once is taken without a wait (its budget event: granted, 0 ms); one that is not waits for it', async () => {
	const events: unknown[] = [];
	// burst 3 with 1 in reserve for the top class: a read (report) needs 2 tokens, the token request (mitigate) 1
	const client = budgetClient(new RateBudget({ app: { rps: 5, burst: 3 } }), {
		onEvent: (e) => {
			if (e.type === 'budget') events.push([e.opId, e.cls, e.granted, e.waitMs === 0 ? 0 : e.waitMs >= 100]);
		},
	});
	await client.call('dashboard.isUnderAttack', { site_id: SITE });
	await client.call('dashboard.isUnderAttack', { site_id: SITE });
	assert.deepEqual(events, [
		['dashboard.isUnderAttack', 'report', true, 0],
		['authorization.appToken', 'mitigate', true, 0],
		['dashboard.isUnderAttack', 'report', true, true],
	]);
});

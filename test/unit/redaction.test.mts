// Secrets never leak: throw from failing calls and search the error, its cause, its stack and its JSON.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { createClient, type ClientEvent } from '../../api/client.ts';
import { redactDeep, redactText } from '../../api/redact.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import '../helpers/started.mts'; // a failing test prints what this file started

const APP = { appId: 'red-app', secret: 'S3cr3t-value-XYZ' };
let sim: Awaited<ReturnType<typeof startSimulator>>;
const transport = createUndiciTransport();
before(async () => {
	sim = await startSimulator({ ...APP, clock: 'manual', seed: 5 });
});
after(async () => {
	await sim.close();
	await transport.close();
});

function everything(e: unknown): string {
	const err = e as Error & { cause?: unknown };
	return [
		String(err),
		err.message,
		err.stack,
		JSON.stringify(err),
		inspect(err, { depth: 10 }),
		inspect(err.cause, { depth: 10 }),
		(err.cause as Error | undefined)?.stack,
	].join('\n');
}

test('errors from API, transport and token failures carry neither the secret nor the token', async () => {
	const events: ClientEvent[] = [];
	const client = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { ...APP, tokenKind: 'app' },
		retries: 0,
		onEvent: (e) => events.push(e),
	});
	const site = sim.sim.firstIds().site_id;
	await client.call('dashboard.isUnderAttack', { site_id: site });
	const token = (
		sim.sim.requests().find((r: { path: string }) => r.path.startsWith('/api/')) as { query: Record<string, string> }
	).query.access_token;
	assert.equal(token, '***', 'the simulator log masks it too');
	const liveToken = await client.tokens!.getToken();
	assert.ok(liveToken.length > 8);

	const failures: unknown[] = [];
	sim.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'code', code: 50001, count: 1 });
	await client.call('dashboard.currentTraffic', { site_id: site }).catch((e) => failures.push(e));
	sim.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'http5xx', count: 1 });
	await client.call('dashboard.currentTraffic', { site_id: site }).catch((e) => failures.push(e));
	sim.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'reset', count: 1 });
	await client.call('dashboard.currentTraffic', { site_id: site }).catch((e) => failures.push(e));
	// wrong secret: the token call fails and echoes nothing
	const bad = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { appId: APP.appId, secret: 'Wrong-secret-777', tokenKind: 'app' },
		retries: 0,
	});
	await bad.call('dashboard.currentTraffic', { site_id: site }).catch((e) => failures.push(e));
	// network failure with the token in the URL
	const dead = createClient({ baseUrl: 'http://127.0.0.1:9', transport, retries: 0 });
	await dead
		.call('dashboard.currentTraffic', { site_id: site }, { accessToken: liveToken })
		.catch((e) => failures.push(e));
	assert.equal(failures.length, 5);
	for (const f of failures) {
		const text = everything(f);
		for (const secret of [APP.secret, liveToken, 'Wrong-secret-777'])
			assert.ok(!text.includes(secret), `leak of ${secret.slice(0, 3)}… in ${text.slice(0, 200)}`);
	}
	const eventText = JSON.stringify(events);
	assert.ok(!eventText.includes(liveToken) && !eventText.includes(APP.secret));
	assert.match(eventText, /access_token=\*\*\*/);
});

test('redactText masks access_token, secret, refresh_token and code in URLs, forms and JSON', () => {
	const s = redactText('GET /x?access_token=abc123&y=1 body secret=zz&code=c0de {"refresh_token":"rt-9","code":"k"}');
	assert.ok(!/abc123|zz|c0de|rt-9|"k"/.test(s), s);
	assert.match(s, /y=1/);
	const d = redactDeep({ a: { secret: 'x1', list: [{ access_token: 'x2' }] }, url: 'http://h/?refresh_token=x3' });
	assert.ok(!JSON.stringify(d).match(/x1|x2|x3/));
});

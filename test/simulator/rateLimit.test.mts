/**
 * The simulator's request rate limit (simulator/rateLimit.mts, README "Rate limit"): off by default; per app with
 * the configured status, code and Retry-After; per tenant; a bad spec refused by the control API naming the field.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boot, ctl } from './helpers.mts';

test('a burst over the limit is refused with the status, code and Retry-After asked for, and not processed', async () => {
	const e = await boot();
	try {
		const url = `${e.url}${e.siteDash}/is_under_attack?access_token=${e.token}`;
		const free = await Promise.all(Array.from({ length: 6 }, () => fetch(url)));
		assert.ok(
			free.every((r) => r.status === 200),
			'no limit unless asked',
		);
		await ctl(e, 'POST', '/ratelimit', { rps: 0.5, burst: 2, retryAfterSeconds: 3 });
		const rs = await Promise.all(Array.from({ length: 6 }, () => fetch(url)));
		const bodies = (await Promise.all(rs.map((r) => r.json()))) as { code: number }[];
		assert.equal(rs.filter((r) => r.status === 200).length, 2, 'the burst goes through');
		const refused = rs.filter((r) => r.status === 429);
		assert.equal(refused.length, 4);
		assert.ok(refused.every((r) => r.headers.get('retry-after') === '3'));
		assert.equal(bodies.filter((b) => b.code === 42901).length, 4);
		assert.equal(e.sim.requests({ op: 'dashboard.isUnderAttack' }).filter((x) => x.fault === 'ratelimit').length, 4);
		const st = await ctl(e, 'GET', '/ratelimit');
		assert.equal(st.refused.app, 4);
		// the envelope only (HTTP 200), another code
		await ctl(e, 'POST', '/ratelimit', { rps: 0.5, burst: 1, status: 200, code: 42999 });
		const two = await Promise.all([fetch(url), fetch(url)]);
		const codes = ((await Promise.all(two.map((r) => r.json()))) as { code: number }[]).map((b) => b.code).sort();
		assert.deepEqual(codes, [0, 42999]);
		assert.ok(two.every((r) => r.status === 200 && r.headers.get('retry-after') === null));
		await ctl(e, 'DELETE', '/ratelimit');
		assert.equal((await fetch(url)).status, 200);
	} finally {
		await e.close();
	}
});

test('a bad limit is refused naming the field; nothing changes', async () => {
	const e = await boot();
	try {
		for (const [spec, field] of [
			[{ rps: 0 }, 'rps'],
			[{ rps: -1 }, 'rps'],
			[{ rps: 'fast' }, 'rps'],
			[{ rps: 5, burst: 0.5 }, 'burst'],
			[{ rps: 5, tenant: { rps: 0 } }, 'tenant.rps'],
			[{ rps: 5, status: 99 }, 'status'],
		] as const) {
			const r = await fetch(`${e.url}/__sim/ratelimit`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify(spec),
			});
			assert.equal(r.status, 400, JSON.stringify(spec));
			assert.match(((await r.json()) as { error: string }).error, new RegExp(`^${field.replace('.', '\\.')}: `));
		}
		assert.equal(e.sim.rateLimiter, undefined);
	} finally {
		await e.close();
	}
});

test("a request one bucket refuses spends no other bucket's token; the limiter records its own stalls", async () => {
	const { RateLimiter } = await import('../../simulator/rateLimit.mts');
	const l = new RateLimiter({ rps: 20, burst: 1, tenant: { rps: 0.01, burst: 2 } });
	try {
		assert.equal(l.check(undefined), undefined, 'the app token');
		assert.equal(l.check('c'), 'app', "refused by the app's bucket: c's tokens untouched");
		await new Promise((r) => setTimeout(r, 120));
		assert.equal(l.check('c'), undefined);
		await new Promise((r) => setTimeout(r, 120));
		assert.equal(l.check('c'), undefined, "c's second token was not spent by the refused request");
		await new Promise((r) => setTimeout(r, 120));
		assert.equal(l.check('c'), 'tenant:c', 'c out of tokens');
		// a 150 ms stall of the simulator's event loop is recorded with its length
		const until = Date.now() + 150;
		while (Date.now() < until);
		await new Promise((r) => setTimeout(r, 60));
		assert.ok(
			l.stalls.some((s) => s.ms >= 100),
			JSON.stringify(l.stalls),
		);
		assert.deepEqual(l.refused, { app: 1, 'tenant:c': 1 });
	} finally {
		l.close();
	}
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { boot, call, ctl, get, type Env } from './helpers.mts';

/**
 * Issue 29: a deeply nested JSON body is malformed input, answered like any other malformed body (§7 leaves the
 * codes to us: 40001, simulator/README "Hostile input"), never as an internal error (50001), and changes nothing.
 */

let e: Env;
before(async () => {
	e = await boot({ httpFilterProcessingMs: 0 });
});
after(() => e.close());

const raw = async (path: string, body: string) => {
	const res = await fetch(`${e.url}${path}?access_token=${e.token}`, {
		method: 'POST',
		body,
		headers: { 'content-type': 'application/json' },
	});
	return { status: res.status, env: (await res.json()) as { code: number; msg: string } };
};

const deep = (n: number, open = '[', close = ']') => open.repeat(n) + close.repeat(n);
const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

test('a 400k-deep JSON body is a request error naming the body, not an internal error; nothing changes', async () => {
	const before = await get(e, `${e.ap}/authentication/ip`);
	for (const body of [
		deep(400_000),
		deepObject(150_000),
		`{"action":"blacklist","enable":2,"mode":2,"action_blacklist":${deep(200_000)}}`,
	]) {
		const r = await raw(`${e.ap}/authentication/ip`, body);
		assert.equal(r.status, 200);
		assert.equal(r.env.code, CODES.VALIDATION, `${body.slice(0, 40)}… → ${r.env.code} ${r.env.msg}`);
		assert.match(r.env.msg, /^body: .*nested/);
	}
	// With strictContentType off the form operations also read a JSON body: same answer.
	e.sim.opts.strictContentType = false;
	try {
		const r = await raw(`${e.ap}/ip-black-list`, `{"ip_black_list":${deep(300_000)}}`);
		assert.equal(r.env.code, CODES.VALIDATION, `${r.env.code} ${r.env.msg}`);
		assert.match(r.env.msg, /^body: .*nested/);
	} finally {
		e.sim.opts.strictContentType = true;
	}
	assert.deepEqual(await get(e, `${e.ap}/authentication/ip`), before);
	// A body within the bound still works, so the bound is not a blanket refusal.
	const ok = await call(e, 'POST', `${e.ap}/authentication/ip`, {
		json: { action: 'blacklist', enable: 2, mode: 2, action_blacklist: { duration: 120, threshold_rps: 50 } },
	});
	assert.equal(ok.code, 0, ok.msg);
});

test('the control API refuses a deeply nested body with 400, state unchanged', async () => {
	const res = await fetch(`${e.url}/__sim/attacks`, {
		method: 'POST',
		body: `{"site_id":${deep(400_000)}}`,
		headers: { 'content-type': 'application/json' },
	});
	assert.equal(res.status, 400);
	assert.match(((await res.json()) as { error: string }).error, /nested/);
	const s = await ctl(e, 'GET', '/state');
	assert.ok(s);
});

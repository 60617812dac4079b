// Issue 36 item 5: a file with a failing test prints what it started (test/helpers/started.mts): the simulator's
// address and seed and its last requests, a child's PID, ports and last output lines; a file that passes prints none.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from '../../demo/stack.mts';

const FIXTURE = join(ROOT, 'test/unit/fixtures/failingFile.mts');

async function runFixture(fail: boolean): Promise<{ code: number; out: string }> {
	const args = ['--import', 'tsx', '--test', '--test-reporter=spec', FIXTURE];
	const env: NodeJS.ProcessEnv = { ...process.env, SECSVC_FIXTURE_FAIL: fail ? '1' : '0', SECSVC_FIXTURE_SEED: '99' };
	delete env.NODE_TEST_CONTEXT; // the runner's mark for its own children: without it the fixture runs as a test run
	try {
		const r = await promisify(execFile)(process.execPath, args, { cwd: ROOT, env, timeout: 60_000 });
		return { code: 0, out: r.stdout + r.stderr };
	} catch (e) {
		const x = e as { code: number; stdout: string; stderr: string };
		return { code: x.code, out: x.stdout + x.stderr };
	}
}

test('a failing file prints its seeds, addresses, PIDs and the last log lines of what it started', async () => {
	const { code, out } = await runFixture(true);
	assert.notEqual(code, 0, out);
	assert.match(out, /1 failing test\(s\); what this file started/);
	assert.match(out, /env SECSVC_FIXTURE_SEED=99/);
	assert.match(out, /▸ simulator · url http:\/\/127\.0\.0\.1:\d+ · seed 4711/);
	assert.match(out, /\| #1 \d\d:\d\d:\d\d\.\d{3} POST \/oauth\/credit\/token → 200 code 0\n/, 'its request log');
	assert.match(out, /▸ fixture child · pid \d+ · port 4242/);
	assert.match(out, /▸ fixture moments · seeds 1, 2, 3\n/, 'bare seeds of one kind in one line');
	assert.match(out, /\| child line 40\n/);
	assert.match(out, /\| child line 16\n/, 'the last 25 lines');
	assert.doesNotMatch(out, /\| child line 15\n/, 'only the last 25 lines');
	const scratch = /scratch (\S+)/.exec(out)?.[1];
	assert.ok(scratch && !existsSync(scratch), `its scratch folder is removed at its exit, failed or not: ${scratch}`);
});

test('a file whose tests pass prints nothing of it', async () => {
	const { code, out } = await runFixture(false);
	assert.equal(code, 0, out);
	assert.doesNotMatch(out, /what this file started/);
});

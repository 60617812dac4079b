/**
 * The compiled worker (worker/src/process/build.mts): records what it was built from, is rebuilt when stale, refuses to run
 * when its sources changed, and starts with the memory flags.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import {
	BUILD_MARK,
	ROOT,
	StaleBuildError,
	assertFreshBuild,
	hashInputs,
	readBuildInfo,
} from '../../worker/src/process/buildInfo.mts';
import {
	DEFAULT_WORKER_NODE_FLAGS,
	WORKER_ENTRY,
	ensureWorkerBuild,
	isFresh,
	workerCommand,
	workerNodeFlags,
} from '../../worker/src/process/build.mts';

test('the build records every repository source it contains, and their hash', () => {
	const entry = ensureWorkerBuild();
	assert.equal(entry, WORKER_ENTRY);
	assert.ok(isFresh());
	const info = readBuildInfo(entry);
	assert.ok(info, 'first line carries the build record');
	for (const f of [
		'worker/src/process/main.mts',
		'worker/src/activities/operations.mts',
		'worker/src/process/bundle.mts',
		'api/client.ts',
		'api/catalog/index.ts',
		'api/runbook/plan.ts',
	])
		assert.ok(info.inputs.includes(f), `${f} is an input`);
	assert.ok(!info.inputs.some((f) => f.includes('node_modules')), 'packages stay external');
	assert.equal(hashInputs(info.inputs, info.salt), info.hash);
	assert.doesNotThrow(() => assertFreshBuild(entry));
	// Sources are not build records.
	assert.equal(readBuildInfo(`${ROOT}worker/src/process/main.mts`), undefined);
	assert.doesNotThrow(() => assertFreshBuild(`${ROOT}worker/src/process/main.mts`));
});

test('a build whose sources changed is stale: not fresh for the launcher, refused by the compiled worker', () => {
	const entry = ensureWorkerBuild();
	const text = readFileSync(entry, 'utf8');
	const nl = text.indexOf('\n');
	const info = readBuildInfo(entry)!;
	// Same depth as worker/dist/main.mjs, so its repository-relative paths resolve the same way; in a node_modules
	// folder, which every linter skips: the static checks run beside this file and read the tree (n8n-node lint
	// crashed with ENOENT on a worker/dist/stale-*.mjs it had listed and this test had removed: session 24).
	const dir = `${ROOT}worker/node_modules`;
	const made = !existsSync(dir);
	mkdirSync(dir, { recursive: true });
	const stale = `${dir}/.secsvc-stale-${process.pid}.mjs`;
	writeFileSync(stale, `${BUILD_MARK}${JSON.stringify({ ...info, hash: '0000000000000000' })}${text.slice(nl)}`);
	try {
		assert.equal(isFresh(stale), false);
		assert.throws(() => assertFreshBuild(stale), StaleBuildError);
		const r = spawnSync(process.execPath, [stale], {
			cwd: ROOT,
			encoding: 'utf8',
			env: { PATH: process.env.PATH },
			timeout: 30_000,
		});
		assert.equal(r.status, 1);
		assert.match(r.stderr, /older than its sources/);
		assert.match(r.stderr, /npm run -w worker build/);
	} finally {
		rmSync(stale, { force: true });
		if (made) rmSync(dir, { recursive: true, force: true });
	}
	// An input that no longer hashes the same makes the launcher rebuild.
	assert.equal(hashInputs([...info.inputs, 'worker/src/no-such-file.mts'], info.salt), undefined);
});

test('worker node flags and environment: default memory flags, none, custom, and a clear error for anything else', () => {
	assert.deepEqual(workerNodeFlags({}), DEFAULT_WORKER_NODE_FLAGS);
	assert.ok(DEFAULT_WORKER_NODE_FLAGS.some((f) => f.startsWith('--max-old-space-size=')));
	assert.deepEqual(workerNodeFlags({ SECSVC_WORKER_NODE_FLAGS: 'none' }), []);
	assert.deepEqual(workerNodeFlags({ SECSVC_WORKER_NODE_FLAGS: ' --optimize-for-size  --max-semi-space-size=1 ' }), [
		'--optimize-for-size',
		'--max-semi-space-size=1',
	]);
	assert.throws(() => workerNodeFlags({ SECSVC_WORKER_NODE_FLAGS: '--ok rm -rf' }), /SECSVC_WORKER_NODE_FLAGS: .*"rm"/);
	const cmd = workerCommand({});
	assert.deepEqual(cmd.args, [...DEFAULT_WORKER_NODE_FLAGS, WORKER_ENTRY]);
	assert.deepEqual(cmd.env, { MALLOC_ARENA_MAX: '2' });
	assert.deepEqual(workerCommand({ MALLOC_ARENA_MAX: '4' }).env, { MALLOC_ARENA_MAX: '4' }, 'an operator setting wins');
	const src = workerCommand({ SECSVC_WORKER_FROM_SOURCE: '1', SECSVC_WORKER_NODE_FLAGS: 'none' });
	assert.deepEqual(src.args, ['--import', 'tsx', `${ROOT}worker/src/process/main.mts`]);
});

test('the compiled worker fails on bad configuration with a clear message and without tsx', () => {
	const cmd = workerCommand({});
	const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, SECSVC_APP_ID: 'a', SECSVC_SECRET: 'top-secret-value-1' };
	const r = spawnSync(cmd.command, cmd.args, {
		cwd: '/',
		encoding: 'utf8',
		env: { ...env, ...cmd.env },
		timeout: 30_000,
	});
	assert.equal(r.status, 1);
	assert.match(r.stderr, /secsvc worker: .*SECSVC_BASE_URL/);
	assert.doesNotMatch(r.stderr + r.stdout, /top-secret-value-1/);
});

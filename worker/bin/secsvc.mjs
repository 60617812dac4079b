#!/usr/bin/env node
// secsvc: run the worker, start / approve / abort / inspect runbooks, manage schedules, print timelines, a sandbox.
// Installed from the npm package (no src/ next to this folder) everything runs from the compiled dist/ (built at pack
// time: worker/src/process/pack.mts); in the repository the TypeScript sources run (.mts, and the shared api/*.ts as
// CommonJS), through tsx.
//
// `secsvc worker` runs the COMPILED worker (dist/main.mjs; in the repository rebuilt first when stale), with the node
// flags of SECSVC_WORKER_NODE_FLAGS, default --max-old-space-size=512 --max-semi-space-size=2; see docs/worker/production.md "Memory"): it replaces this
// process where node can (process.execve, node ≥ 22.15), else runs as a child that this (plain, ~40 MB) process
// waits for and forwards signals to, and that exits when this process is gone (see below). SECSVC_WORKER_IN_PROCESS=1 runs the worker inside this process.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const packaged = !existsSync(new URL('../src', import.meta.url));

if (process.argv[2] === 'worker' && process.env.SECSVC_WORKER_IN_PROCESS !== '1') {
	const root = fileURLToPath(new URL('../../', import.meta.url));
	let cmd;
	if (packaged) {
		const { workerLaunch } = await import('../dist/launch.mjs');
		try {
			cmd = workerLaunch();
		} catch (e) {
			console.error(`secsvc worker: ${e.message}`);
			process.exit(1);
		}
	} else
		try {
			const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../src/process/build.mts', import.meta.url)), '--command'], {
				cwd: root,
				encoding: 'utf8',
				stdio: ['ignore', 'pipe', 'inherit'],
			});
			cmd = JSON.parse(out.trim().split('\n').pop());
		} catch {
			process.exit(1); // build.mts printed why
		}
	const rest = process.argv.slice(3);
	const env = { ...process.env, ...cmd.env }; // MALLOC_ARENA_MAX (build.mts workerEnv)
	if (typeof process.execve === 'function') process.execve(cmd.command, [cmd.command, ...cmd.args, ...rest], env);
	// Node < 22.15: the worker runs as a child. It must never outlive this process, whatever ends it (SIGKILL, OOM
	// killer): it holds the other end of a pipe (fd 3, SECSVC_PARENT_FD) and exits at once when that pipe closes
	// (worker/src/process/main.mts watchParent). That needs its event loop, which is busy for a second or more (longer on a
	// loaded machine) while node loads the worker's modules; where util-linux's setpriv can, the kernel also kills
	// it when this process dies (parent-death signal), loading or not. It runs in its own process group so that a
	// terminal's Ctrl-C reaches it once, forwarded from here: a second signal means "stop now" to the worker.
	let [command, args] = [cmd.command, [...cmd.args, ...rest]];
	if (process.platform === 'linux' && spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout?.includes('--pdeathsig'))
		[command, args] = ['setpriv', ['--pdeathsig', 'SIGKILL', '--', command, ...args]];
	const child = spawn(command, args, { stdio: ['inherit', 'inherit', 'inherit', 'pipe'], env: { ...env, SECSVC_PARENT_FD: '3' }, detached: true });
	for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
	const signum = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
	child.on('exit', (code, signal) => process.exit(code ?? 128 + (signum[signal] ?? 1)));
} else if (packaged) {
	const { run } = await import('../dist/cli.mjs');
	process.exitCode = await run(process.argv.slice(2));
} else {
	const { register: registerCjs } = await import('tsx/cjs/api');
	const { register: registerEsm } = await import('tsx/esm/api');
	registerCjs();
	registerEsm();
	const { run } = await import('../src/commands/cli.mts');
	process.exitCode = await run(process.argv.slice(2));
}

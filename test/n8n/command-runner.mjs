// One n8n process for a user folder's n8n CLI commands (harness.mts `n8nCli`), run with the cached Node 24: it starts
// the way bin/n8n does, runs the `execute` command's init once (database, nodes and credentials, community packages,
// task runner, expression engine: a superset of what import:* / export:* / list:* need), then runs each command's own
// run() — the code `n8n <command>` runs — with its flags parsed by n8n's CliParser. A process per command spent ~2
// CPU-s (quiet) to 4.5 (loaded) on that start for a few ms of work (test/README.md "One n8n process per user folder").
// Protocol: one JSON line per command on stdin `{id, args, stdout, stderr}`; what n8n prints while the command runs is
// appended to the files `stdout` / `stderr` as it is printed; the answer `MARK{"id","code"}` (code 0, or 1 when the command threw
// or called process.exit(1), as the CLI's exit code) goes to the real stdout. stdin's end: n8n's own exit path.
import { createRequire } from 'node:module';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { inspect } from 'node:util';

const MARK = '@@n8n-command@@';
const runtime = process.env.N8N_RUNTIME;
if (!runtime) throw new Error('N8N_RUNTIME must be set');
const n8nDir = join(runtime, 'node_modules/n8n');
const n8nRequire = createRequire(join(n8nDir, 'package.json'));

// What bin/n8n does before its command registry (instance type from argv[2]: 'execute' is a main instance).
process.argv = [process.argv[0], join(n8nDir, 'bin/n8n'), 'execute'];
process.env.NODE_CONFIG_DIR = process.env.NODE_CONFIG_DIR || join(n8nDir, 'bin/config');
inspect.defaultOptions.customInspect = false;
n8nRequire('source-map-support').install();
n8nRequire('reflect-metadata');
n8nRequire('dotenv').config({ quiet: true });
n8nRequire('./dist/config');
n8nRequire('net').setDefaultAutoSelectFamily?.(false);
n8nRequire('./dist/zod-alias-support'); // as its command registry does: the flags' `.alias()`

const realStdout = process.stdout.write.bind(process.stdout);
const realStderr = process.stderr.write.bind(process.stderr);
let capture = null; // { stdout, stderr }: the files of the command running (each write appended whole, at once)
const sink =
	(which) =>
	(chunk, ...rest) => {
		if (!capture) return realStderr(chunk, ...rest);
		appendFileSync(capture[which], chunk);
		const done = rest.find((a) => typeof a === 'function');
		if (done) process.nextTick(done);
		return true;
	};
process.stdout.write = sink('stdout');
process.stderr.write = sink('stderr');
const answer = (obj) => realStdout(`${MARK}${JSON.stringify(obj)}\n`);

class ExitCalled extends Error {
	constructor(code) {
		super(`process.exit(${code}) called by the command`);
		this.code = code;
	}
}
const realExit = process.exit.bind(process);

const { Container } = n8nRequire('@n8n/di');
const { CommandMetadata } = n8nRequire('@n8n/decorators');
const { CliParser, ModuleRegistry } = n8nRequire('@n8n/backend-common');
const { Execute } = n8nRequire('./dist/commands/execute.js');

const execute = Container.get(Execute);
execute.flags = {};
await Container.get(ModuleRegistry).loadModules();
await execute.init();

async function runCommand(args) {
	const name = args[0];
	n8nRequire(`./dist/commands/${name.replaceAll(':', '/')}.js`);
	const entry = Container.get(CommandMetadata).get(name);
	if (!entry) throw new Error(`Command "${name}" not found`);
	const { flags } = Container.get(CliParser).parse({
		argv: [process.argv[0], process.argv[1], ...args],
		flagsSchema: entry.flagsSchema,
	});
	const command = Container.get(entry.class);
	command.flags = flags;
	try {
		await command.run();
		return 0;
	} catch (e) {
		if (e instanceof ExitCalled) return e.code ?? 0;
		await command.catch?.(e);
		if (e?.message) command.logger.error(e.message); // as BaseCommand.finally prints it before exiting with 1
		return 1;
	}
}

const rl = createInterface({ input: process.stdin });
answer({ ready: true, pid: process.pid });
for await (const line of rl) {
	if (!line.trim()) continue;
	const msg = JSON.parse(line);
	writeFileSync(msg.stdout, '');
	writeFileSync(msg.stderr, '');
	capture = msg;
	process.exit = (code) => {
		throw new ExitCalled(code);
	};
	let code;
	try {
		code = await runCommand(msg.args);
	} catch (e) {
		appendFileSync(msg.stderr, `${e?.stack ?? e}\n`);
		code = 1;
	} finally {
		process.exit = realExit;
	}
	capture = null;
	answer({ id: msg.id, code });
}
// stdin closed: n8n's own way out of a command (database closed, process.exit(0))
await execute.finally(undefined);

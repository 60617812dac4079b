// issue 40: `npm run simulator -- --help` lists the options and the control API (was a Node stack trace,
// ERR_PARSE_ARGS_UNKNOWN_OPTION); an unknown option is one line and the help; the site's own network is printed at
// start and readable at /__sim/sites/{id}/network, without /__sim/state.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPTIONS } from '../../simulator/help.mts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = ['--import', 'tsx', 'simulator/main.mts'];

test('--help: every option with its default, the control API routes; exit 0, nothing started', () => {
	const r = spawnSync(process.execPath, [...MAIN, '--help'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
	assert.equal(r.status, 0, r.stderr);
	for (const name of Object.keys(OPTIONS)) assert.match(r.stdout, new RegExp(`--${name}\\b`), name);
	assert.match(r.stdout, /--port VALUE\s+port to listen on .*\(default 8443\)/);
	assert.match(r.stdout, /POST \/__sim\/attacks\s+start an attack/);
	assert.match(r.stdout, /GET {2}\/__sim\/sites\/\{site_id\}\/network/);
	assert.doesNotMatch(r.stdout + r.stderr, /ERR_PARSE_ARGS|at .*\.mts:\d+/);
	const h = spawnSync(process.execPath, [...MAIN, '-h'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
	assert.equal(h.stdout, r.stdout);
});

test('an unknown option: one line naming it, then the help; exit 2, no stack trace', () => {
	const r = spawnSync(process.execPath, [...MAIN, '--bogus'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
	assert.equal(r.status, 2);
	assert.match(r.stderr, /^simulator: Unknown option '--bogus'/);
	assert.match(r.stderr, /Usage: npm run simulator -- \[options\]/);
	assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test("the site's own network: printed at start, and read at /__sim/sites/{id}/network", async () => {
	const child = spawn(process.execPath, [...MAIN, '--port', '0', '--clock', 'manual'], {
		cwd: ROOT,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	try {
		const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
		const err = createInterface({ input: child.stderr });
		let printed = '';
		for await (const line of err) if (/own addresses/.test((printed = line))) break;
		const net = (await (await fetch(`${url}/__sim/sites/20001/network`)).json()) as {
			site_ip: string;
			networks: { cidr: string; hosts: string[] }[];
		};
		assert.ok(net.networks.length > 0 && net.networks.every((n) => n.hosts.length > 0), JSON.stringify(net));
		assert.match(printed, new RegExp(`^site 20001's own addresses: site_ip ${net.site_ip.replace(/\./g, '\\.')}; `));
		for (const n of net.networks) assert.ok(printed.includes(n.cidr), `${n.cidr} printed: ${printed}`);
		assert.ok(printed.endsWith(`${url}/__sim/sites/20001/network`), printed);
		const missing = await fetch(`${url}/__sim/sites/99999/network`);
		assert.equal(missing.status, 404);
		assert.deepEqual(await missing.json(), { error: "site '99999' does not exist" });
	} finally {
		child.kill('SIGTERM');
		await once(child, 'exit');
	}
});

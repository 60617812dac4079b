// Issue 40 item 4: what a SOC does from README.md alone, in the real n8n 2.40.7 (Debian's chromium, playwright-core).
// Every value a step uses comes from the README or from what the installed commands print, never from this test's
// knowledge of the stack; a value a person would have to guess fails the step that needs it:
//  1. "Installation": the packed n8n package into a fresh user folder's ~/.n8n/nodes (editor-server.mts); "Run the
//     runbooks": the packed worker package `npm install`ed into a fresh folder, `secsvc sandbox --simulator` on
//     non-default ports (the flags from its --help, where the README sends a reader);
//  2. "Usage": trigger (On attack started, the printed site and domain-port) → Security Service (IP Blacklist ›
//     Block, the README's expressions) with the credential from the printed simulator line: the sources are blocked;
//  3. "Run the runbooks" / "Runbook plans": the Temporal API credential (printed HTTP API, Payload Key from the printed
//     approver.env), Manual → Start (the README's plan, Require Approval, bob's ID Token from `secsvc id-token`) → the
//     gate; oncall-alice logs in for it (`secsvc id-token SITE`, the local provider's page in the browser) → Decide:
//     accepted and verified by the sandbox's identity provider.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort } from '../../demo/stack.mts';
import { waitFor } from '../temporal/helpers.mts';
import { OWNER, startN8nServer, type N8nServer } from './editor-server.mts';
import { EditorUi } from './editor-ui.mts';
import { packPackage, ROOT } from './harness.mts';
import { packWorker } from '../helpers/packWorker.mts';

const OUT = join(process.env.SECSVC_TEST_OUTPUT || join(ROOT, 'test-output'), 'readme');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'secsvc-readme-'));
const app = join(dir, 'app');
const SECSVC = join(app, 'node_modules', '.bin', 'secsvc');

let server: N8nServer;
let browser: Browser;
let page: Page;
let ui: EditorUi;
let sandbox: ReturnType<typeof run>;
let printed: Record<'simUrl' | 'appId' | 'secret' | 'http' | 'site' | 'domainPort' | 'approverEnv', string>;

/** A user's shell: nothing of ours; the sandbox's data and cache under the test's folder. */
const userEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
	PATH: process.env.PATH,
	HOME: join(dir, 'home'),
	XDG_DATA_HOME: join(dir, 'data'),
	XDG_CACHE_HOME: join(dir, 'cache'),
	...(process.env.TEMPORAL_BIN ? { TEMPORAL_BIN: process.env.TEMPORAL_BIN } : {}),
	...extra,
});

function run(args: string[], env = userEnv()) {
	const child = spawn(SECSVC, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
	let out = '';
	let err = '';
	child.stdout.on('data', (d: Buffer) => (out += d.toString()));
	child.stderr.on('data', (d: Buffer) => (err += d.toString()));
	const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
	return { child, exit, out: () => out, err: () => err };
}

/** One value from the sandbox's printed summary: a line it does not print is a value a reader would have to guess. */
function pick(text: string, re: RegExp, what: string): string[] {
	const m = re.exec(text);
	assert.ok(m, `the sandbox prints ${what} (${re}):\n${text}`);
	return m.slice(1);
}

before(async () => {
	mkdirSync(OUT, { recursive: true });
	mkdirSync(app);
	writeFileSync(join(app, 'package.json'), '{ "name": "soc", "private": true }\n');
	execFileSync('npm', ['install', '--no-audit', '--no-fund', packWorker(ROOT, dir)], { cwd: app, stdio: 'ignore' });
	server = await startN8nServer(packPackage(join(dir, 'n8n-pack')));
	browser = await chromium.launch({
		executablePath:
			process.env.CHROMIUM_BIN ||
			execFileSync('bash', [join(ROOT, 'scripts/chromium.sh'), 'path'])
				.toString()
				.trim(),
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
	page.setDefaultTimeout(30_000);
	ui = new EditorUi(page, OUT);
});

afterEach(async (t) => {
	if (!(t as unknown as { passed: boolean }).passed) await ui?.screenshot('failed').catch(() => {});
});

after(async () => {
	if (sandbox?.child.exitCode === null) {
		process.kill(sandbox.child.pid as number, 'SIGINT');
		await sandbox.exit;
	}
	await browser?.close();
	await server?.stop();
	rmSync(dir, { recursive: true, force: true });
});

test('Run the runbooks: the installed `secsvc sandbox --simulator` on other ports prints every value the next steps need', async () => {
	const help = run(['sandbox', '--help']);
	assert.equal(await help.exit, 0, help.err());
	const flags = ['--grpc-port', '--http-port', '--ui-port', '--simulator-port', '--identity-port'];
	for (const f of flags) assert.ok(help.out().includes(f), `sandbox --help names ${f}: ${help.out()}`);
	const ports: number[] = [];
	while (ports.length < flags.length) {
		const p = await freePort();
		if (!ports.includes(p)) ports.push(p);
	}
	sandbox = run(['sandbox', '--simulator', ...flags.flatMap((f, i) => [f, String(ports[i])])]);
	await waitFor(
		'the sandbox ready',
		async () => {
			assert.equal(sandbox.child.exitCode, null, `the sandbox ended: ${sandbox.out()}${sandbox.err()}`);
			return sandbox.out().includes('  next ');
		},
		300_000,
		250,
	);
	const s = sandbox.out();
	const [simUrl, appId, secret] = pick(s, /simulator +(\S+) +app id (\S+), secret (\S+)/, 'the simulator');
	const [http] = pick(s, /Temporal HTTP +(\S+)/, "Temporal's HTTP API");
	const [site, domainPort] = pick(s, /site +(\d+) \(customer \d+, domain-port (\d+)\)/, 'the site and domain-port');
	const [approverEnv] = pick(s, /approvers +\. (\S+)/, "the approvers' settings");
	printed = { simUrl, appId, secret, http, site, domainPort, approverEnv };
	assert.equal(http, `http://127.0.0.1:${ports[1]}`);
});

test('Usage: trigger → IP Blacklist › Block built in the editor blocks the sandbox attack on the service', async () => {
	await page.goto(`${server.url}/signin`, { waitUntil: 'domcontentloaded' });
	await page.locator('input[name=emailOrLdapLoginId]').fill(OWNER.email);
	await page.locator('input[name=password]').fill(OWNER.password);
	await page.keyboard.press('Enter');
	await page.waitForURL((u) => !u.pathname.includes('signin'));
	await page.goto(`${server.url}/workflow/new`, { waitUntil: 'domcontentloaded' });
	await page.locator('[data-test-id="node-creator-plus-button"]').click();
	await ui.addFromPanel('Security Service', 'Security Service', 'On attack started');
	await ui.fill('site_id', printed.site);
	await ui.fill('domainPortIds', printed.domainPort);
	const modal = await ui.newCredential('Security Service');
	await modal.locator('[data-test-id="parameter-input-baseUrl"] input').fill(printed.simUrl);
	await modal.locator('[data-test-id="parameter-input-appId"] input').fill(printed.appId);
	await modal.locator('[data-test-id="parameter-input-secret"] input').fill(printed.secret);
	await ui.saveAndExpectSuccess('credential');
	await ui.closeCredential();
	let mark = await ui.executionIds();
	await ui.executeStep();
	const event = await ui.nodeRun(mark);
	const ranges = event.items[0]?.attacking_ranges as string[] | undefined;
	assert.ok(Array.isArray(ranges) && ranges.length > 0, JSON.stringify(event.items).slice(0, 600));
	await ui.closePanel();

	await ui.canvasNode('On attack started').hover();
	await page.locator('[data-test-id="canvas-handle-plus"]').first().click();
	await ui.addFromPanel('block ip', 'Security Service', 'Block IP addresses or ranges');
	// README "Usage": Site ID {{ $json.site_id }}, Domain-Port ID {{ $json.domain_port_id }}, IP Address or Range {{ $json.attacking_ranges }}
	const mapped = [...README.matchAll(/(Site ID|Domain-Port ID|IP Address\s+or Range) `\{\{ (\$json\.\w+) \}\}`/g)];
	assert.equal(mapped.length, 3, 'README "Usage" maps the three fields');
	for (const [, label, expr] of mapped)
		await ui.expression({ 'Site ID': 'site_id', 'Domain-Port ID': 'domain_port_id' }[label] ?? 'ip_black_list', expr);
	mark = await ui.executionIds();
	await ui.executeStep();
	const block = await ui.nodeRun(mark);
	assert.deepEqual(block.items[0]?.blocked, ranges, JSON.stringify(block.items).slice(0, 800));
	await ui.screenshot('blocked');
	const held = await (await fetch(`${printed.simUrl}/__sim/state`)).text();
	for (const r of ranges) assert.ok(held.includes(r.split('-')[0].split('/')[0]), `the service holds ${r}`);
	await ui.closePanel();
});

/** `secsvc id-token [SITE]` with approver.env, `who` logging in on the provider's page the command prints. */
async function idToken(who: string, site?: string): Promise<string> {
	const env = Object.fromEntries(
		[...readFileSync(printed.approverEnv, 'utf8').matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]),
	);
	const cli = run(['id-token', ...(site ? [site] : [])], userEnv(env));
	let url = '';
	await waitFor(
		'the login address',
		async () => !!(url = /Open (\S+) to log in/.exec(cli.err())?.[1] ?? ''),
		30_000,
		100,
	);
	const login = await browser.newPage();
	await login.goto(url);
	await login.getByRole('button', { name: new RegExp(`^${who}@`) }).click();
	assert.equal(await cli.exit, 0, cli.err());
	await login.close();
	const token = cli.out().trim();
	assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'id-token prints the ID token');
	return token;
}

async function newWorkflowWith(action: string): Promise<void> {
	await page.goto(`${server.url}/workflow/new`, { waitUntil: 'domcontentloaded' });
	await page.locator('[data-test-id="node-creator-plus-button"]').click();
	await ui.search('manual');
	await page.locator('[data-test-id="node-creator"]').getByText('Manual Trigger', { exact: true }).first().click();
	await ui.canvasNode('When clicking').first().hover();
	await page.locator('[data-test-id="canvas-handle-plus"]').first().click();
	await ui.addFromPanel('runbook', 'Security Service Runbook', action);
	if (action !== 'Start an attack-response runbook') await ui.credentialOnNode(); // the only one of its type
}

async function runWorkflow(): Promise<Record<string, unknown>> {
	const mark = await ui.executionIds();
	await page.locator('[data-test-id="execute-workflow-button"]').click();
	const r = await ui.nodeRun(mark, 90_000);
	assert.equal(r.error, undefined, JSON.stringify(r.error));
	return r.items[0];
}

test('Start (Require Approval) → Decide with ID tokens from `secsvc id-token`: proven by the sandbox provider', async () => {
	await newWorkflowWith('Start an attack-response runbook');
	const modal = await ui.newCredential();
	await modal.locator('[data-test-id="parameter-input-address"] input').fill(printed.http);
	const key = /SECSVC_PAYLOAD_KEYS='([^']+)'/.exec(readFileSync(printed.approverEnv, 'utf8'))?.[1] as string;
	await modal.locator('[data-test-id="parameter-input-payloadSecretKey"] input').fill(key);
	await ui.saveAndExpectSuccess('temporal-credential');
	await ui.closeCredential();
	// README "Runbook plans": its plan, for the printed site
	const plan = JSON.parse(/## Runbook plans[\s\S]*?```json\n([\s\S]*?)```/.exec(README)?.[1] as string);
	assert.deepEqual([plan.site_id, plan.domain_ports], [printed.site, [printed.domainPort]], "the README's plan fits");
	const editor = ui.ndv.locator('[data-test-id="parameter-input-plan"] [contenteditable="true"]').first();
	await editor.click();
	await page.keyboard.press('ControlOrMeta+a');
	await page.keyboard.insertText(JSON.stringify(plan, null, 1));
	await ui.ndv.locator('[data-test-id="parameter-input-approvalRequired"]').click();
	await ui.fill('idToken', await idToken('bob'));
	await ui.screenshot('start');
	await ui.closePanel();
	const started = await runWorkflow();
	assert.equal(started.status, 'started', JSON.stringify(started));

	let state = '';
	await waitFor(
		'the runbook at its gate (secsvc inspect)',
		async () => {
			const r = run(
				['inspect', printed.site],
				userEnv({ TEMPORAL_ADDRESS: pick(sandbox.out(), /Temporal gRPC +(\S+)/, 'gRPC')[0] }),
			);
			await r.exit;
			state = r.out();
			return /"phase": "awaiting-approval"/.test(state);
		},
		120_000,
		1000,
	);
	const token = await idToken('oncall-alice', printed.site);
	await newWorkflowWith('Approve or reject a runbook');
	await ui.fill('runbook', printed.site);
	await ui.choose('decision', 'Approve');
	await ui.fill('idToken', token);
	await ui.screenshot('decide');
	await ui.closePanel();
	const decided = await runWorkflow();
	const json = JSON.stringify(decided).slice(0, 800);
	assert.equal(decided.accepted, true, json);
	assert.equal(decided.by, 'oncall-alice@example.com', json);
	assert.equal((decided.identity as { verified?: string } | undefined)?.verified, 'oidc', json);
});

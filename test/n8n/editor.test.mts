// The nodes as a user meets them: the real n8n 2.40.7 in server mode with the packed package in ~/.n8n/custom,
// Debian's chromium driven by playwright-core (executablePath; never a browser download), the simulator as the
// service. Screenshots go to test-output/editor/ ($SECSVC_TEST_OUTPUT/editor; gitignored). The test fails on console
// errors that come from our nodes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createClient } from '../../api/client.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { OWNER, startN8nServer, type N8nServer } from './editor-server.mts';
import { EditorUi } from './editor-ui.mts';
import { packPackage, ROOT } from './harness.mts';

const APP = { appId: 'editor-app', secret: 'editor-secret-value-7' };
const WRONG_SECRET = 'not-the-secret-0000';
const OUT = join(process.env.SECSVC_TEST_OUTPUT || join(ROOT, 'test-output'), 'editor');

let sim: Awaited<ReturnType<typeof startSimulator>>;
let server: N8nServer | undefined;
let url = '';
let browser: Browser;
let page: Page;
let ui: EditorUi;
let work: string;
let ids: ReturnType<typeof sim.sim.firstIds>;
const ourConsoleErrors: string[] = [];

/** The simulator's request log after sequence number `mark` (what reached the service). */
const since = (mark: number) => sim.sim.requests().filter((e) => e.seq > mark);
const lastSeq = () => sim.sim.requests().at(-1)?.seq ?? 0;

/** is_under_attack read straight from the simulator over raw HTTP (not through n8n, the node or the client). */
async function underAttackFromService(): Promise<{ status: number; bps_size: number }> {
	const form = new URLSearchParams({ app_id: APP.appId, secret: APP.secret, grant_type: 'client_credential' });
	const tok = (await (await fetch(`${sim.url}/oauth/credit/token`, { method: 'POST', body: form })).json()) as {
		result: { access_token: string };
	};
	const res = await fetch(
		`${sim.url}/api/specp/op/dashboard/site/${ids.site_id}/is_under_attack?access_token=${tok.result.access_token}`,
	);
	return ((await res.json()) as { result: { status: number; bps_size: number } }).result;
}

before(async () => {
	mkdirSync(OUT, { recursive: true });
	sim = await startSimulator({ port: 0, ...APP, seed: 9 });
	ids = sim.sim.firstIds();
	sim.sim.startAttack({ site_id: ids.site_id, duration: 3600, sources: [{ ip: '198.18.0.1' }] });
	const chromiumPath = execFileSync('bash', [join(ROOT, 'scripts/chromium.sh'), 'path'], {
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'inherit'],
	}).trim();
	if (process.env.SECSVC_EDITOR_URL) {
		url = process.env.SECSVC_EDITOR_URL; // development only: a running server started the same way
	} else {
		work = mkdtempSync(join(tmpdir(), 'secsvc-editor-'));
		server = await startN8nServer(packPackage(join(work, 'pack')));
		url = server.url;
	}
	browser = await chromium.launch({
		executablePath: chromiumPath,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
	page.setDefaultTimeout(45_000);
	ui = new EditorUi(page, OUT);
	page.on('console', (m) => {
		if (m.type() !== 'error') return;
		const text = m.text();
		if (/security.?service|securityService|secsvc/i.test(text)) ourConsoleErrors.push(text);
	});
	page.on('pageerror', (e) => {
		if (/security.?service|securityService|secsvc/i.test(`${e.message}\n${e.stack ?? ''}`))
			ourConsoleErrors.push(e.message);
	});
});

// A failing step leaves the page as it was: its screenshot is in the test output (CI keeps it).
afterEach(async (t) => {
	if (!(t as unknown as { passed: boolean }).passed) await ui?.screenshot('failed').catch(() => {});
});

after(async () => {
	await browser?.close();
	await server?.stop();
	await sim?.close();
	if (work) rmSync(work, { recursive: true, force: true });
});

test('sign in, find the nodes by what a SOC engineer types, see the trigger events', async () => {
	await page.goto(`${url}/signin`, { waitUntil: 'domcontentloaded' });
	await page.locator('input[name=emailOrLdapLoginId]').fill(OWNER.email);
	await page.locator('input[name=password]').fill(OWNER.password);
	await page.keyboard.press('Enter');
	await page.waitForURL((u) => !u.pathname.includes('signin'));
	await page.goto(`${url}/workflow/new`, { waitUntil: 'domcontentloaded' });
	await page.locator('[data-test-id="node-creator-plus-button"]').click();
	await ui.search('block ip');
	const creator = page.locator('[data-test-id="node-creator"]');
	await creator.getByText('Security Service', { exact: true }).first().waitFor();
	await ui.screenshot('search-block-ip');
	await creator.getByText('Security Service', { exact: true }).first().click();
	for (const label of ['On new DDoS event', 'On attack started', 'On attack stopped', 'On new flow-down alert'])
		await creator.getByText(label, { exact: true }).waitFor();
	await ui.screenshot('app-triggers');
	await creator.getByText('On attack started', { exact: true }).click();
	await ui.ndv.getByText('Site IDs', { exact: true }).waitFor();
	await ui.fill('site_id', ids.site_id);
	await ui.screenshot('trigger-panel');
	await ui.closePanel();
	await ui.canvasNode('On attack started').waitFor();
});

test('add the action from the panel: the address to block is the first field', async () => {
	await page.locator('[data-test-id="node-creator-plus-button"]').click();
	await ui.search('block ip');
	const creator = page.locator('[data-test-id="node-creator"]');
	await creator.getByText('Security Service', { exact: true }).first().click();
	// An installed community package opens on its "Node details" (Installed, via npm) with every action listed.
	await creator.getByText('Block IP addresses or ranges', { exact: true }).click();
	await ui.ndv.locator('[data-test-id="parameter-input-ip_black_list"]').waitFor();
	const order = await ui.ndv
		.locator('[data-test-id^="parameter-input-"]')
		.evaluateAll((els) => els.map((e) => e.getAttribute('data-test-id')));
	const fields = order.filter(
		(t) => t && !/resource|operation|alwaysOutputData|executeOnce|retryOnFail|onError|notes|field|mode|item/.test(t),
	);
	assert.equal(fields[0], 'parameter-input-ip_black_list', `first field: ${fields.join(', ')}`);
	await ui.screenshot('block-ip-panel');
});

test('create the credential in the UI: Save runs the credential test, which succeeds', async () => {
	// The node offers two credentials (the Temporal one only for a token taken from the cluster): pick this one.
	const empty = ui.ndv.locator('[data-test-id="node-credentials-empty-state"]').filter({ hasText: 'Security Service' });
	if (await empty.count()) await empty.click();
	else {
		await ui.ndv.locator('[data-test-id="node-credentials-select"]').first().click();
		await page
			.getByText(/Create new credential/)
			.first()
			.click();
	}
	const modal = ui.credentialModal;
	await modal.locator('[data-test-id="parameter-input-baseUrl"] input').fill(sim.url);
	await modal.locator('[data-test-id="parameter-input-appId"] input').fill(APP.appId);
	await modal.locator('[data-test-id="parameter-input-secret"] input').fill(APP.secret);
	const mark = lastSeq();
	await ui.saveAndExpectSuccess('credential-ok');
	assert.deepEqual(
		since(mark).map((e) => [e.opId, e.code]),
		[
			['authorization.appToken', 0],
			['customer.list', 0],
		],
	);
	await ui.closeCredential();
});

test('issue 40: one credential slot with its own label; the Temporal one only for Token Source "cluster"; Unblock → Block leaves the address empty', async () => {
	const temporalSlot = ui.ndv.getByText('Temporal Credential (Cluster Token)');
	assert.equal(await temporalSlot.count(), 0, 'no Temporal slot for a node that does not need one');
	assert.ok(await ui.ndv.getByText('Security Service Credential').count(), 'the slot says what it takes');
	await ui.screenshot('one-credential-slot');
	await ui.choose('tokenSource', "From the Cluster's Token Owner (Temporal)");
	await temporalSlot.first().waitFor();
	await ui.screenshot('cluster-token-slot');
	await ui.choose('tokenSource', 'This Credential');
	await temporalSlot.first().waitFor({ state: 'detached' });

	// n8n keeps a value across operations when the name is the same: Unblock's list once showed [object Object] here.
	await ui.choose('operation', 'Unblock');
	await ui.ndv
		.locator(
			'[data-test-id="parameter-input-ip_black_list_entries"], [data-test-id="fixed-collection-ip_black_list_entries"]',
		)
		.first()
		.waitFor()
		.catch(() => undefined);
	await ui.choose('operation', 'Block');
	const value = await ui.ndv.locator('[data-test-id="parameter-input-ip_black_list"] input').inputValue();
	assert.equal(value, '', `IP Address or Range after Unblock → Block: ${JSON.stringify(value)}`);
	await ui.screenshot('unblock-then-block');
});

test('conditional fields appear with the action; a customer is picked from the list', async () => {
	await ui.choose('resource', 'HTTP Filter Policy');
	await ui.choose('operation', 'Create');
	await ui.choose('action', 'Show Busy Page');
	await ui.ndv.locator('[data-test-id="parameter-input-page"]').waitFor();
	assert.equal(await ui.ndv.locator('[data-test-id="parameter-input-redirect_host"]').count(), 0);
	await ui.screenshot('http-filter-busy-page');
	await ui.choose('action', 'Redirect to URL');
	await ui.ndv.locator('[data-test-id="parameter-input-redirect_host"]').waitFor();
	await ui.ndv.locator('[data-test-id="parameter-input-redirect_url"]').waitFor();
	assert.equal(await ui.ndv.locator('[data-test-id="parameter-input-page"]').count(), 0);
	await ui.screenshot('http-filter-redirect');

	await ui.choose('resource', 'Customer');
	await ui.choose('operation', 'Get');
	await ui.ndv.locator('[data-test-id="parameter-input-customer_id"]').click();
	const customers = sim.sim.snapshot().customers as Array<{ customer_id: string; customer_name: string }>;
	const first = customers[0];
	const item = page.getByText(`${first.customer_name} (${first.customer_id})`, { exact: true });
	await item.waitFor();
	await ui.screenshot('customer-list');
	await item.click();
	await item.waitFor({ state: 'hidden' });
	await ui.screenshot('customer-picked');
	await ui.closePanel();
});

/**
 * What the editor asks n8n for when a user opens a list: the same REST call, sent from the signed-in page with the
 * `browser-id` header the editor sends (n8n ends a session whose requests come without it).
 */
async function editorList(
	kind: 'resource-locator-results' | 'options',
	methodName: string,
	currentNodeParameters: Record<string, unknown>,
): Promise<Array<{ name: string; value: unknown }>> {
	const out = await page.evaluate(
		async ({ kind, methodName, currentNodeParameters }) => {
			const headers = { 'content-type': 'application/json', 'browser-id': localStorage.getItem('n8n-browserId') ?? '' };
			const creds = (await (await fetch('/rest/credentials', { headers })).json()) as {
				data: Array<{ id: string; name: string; type: string }>;
			};
			const cred = creds.data.find((c) => c.type === 'securityServiceApi');
			if (!cred) return { status: 0, text: 'no stored securityServiceApi credential' };
			const res = await fetch(`/rest/dynamic-node-parameters/${kind}`, {
				method: 'POST',
				headers,
				body: JSON.stringify({
					path: kind === 'options' ? 'parameters.ip_black_list.values[0].value' : 'parameters.x',
					nodeTypeAndVersion: { name: 'n8n-nodes-security-service.securityService', version: 1 },
					methodName,
					currentNodeParameters,
					credentials: { securityServiceApi: { id: cred.id, name: cred.name } },
				}),
			});
			return { status: res.status, text: await res.text() };
		},
		{ kind, methodName, currentNodeParameters },
	);
	assert.equal(out.status, 200, out.text);
	const body = JSON.parse(out.text) as {
		data: { results?: Array<{ name: string; value: unknown }> } | Array<{ name: string; value: unknown }>;
	};
	return Array.isArray(body.data) ? body.data : (body.data.results ?? []);
}

test('entries to update or delete are picked from what the service holds: status codes, bypasses, blacklist entries', async () => {
	const transport = createUndiciTransport({ connections: 1 });
	const api = createClient({ baseUrl: sim.url, transport, credentials: { ...APP, tokenKind: 'app' }, retries: 0 });
	const at = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	try {
		await api.call('applicationProtection.statusCodes.create', {
			...at,
			error_code: 404,
			error_code_rewrite: 200,
			error_page_type: 0,
		});
		await api.call('applicationProtection.authBypass.add', {
			...at,
			host: 'health.example.net',
			scheme: 'https',
			uri: '/ping',
		});
		await api.call('applicationProtection.ipBlacklist.add', { ...at, ip_black_list: '192.0.2.0/30' });
	} finally {
		await transport.close();
	}
	const params = { resource: 'applicationProtection.statusCodes', operation: 'update', ...at };
	const codes = await editorList('resource-locator-results', 'searchStatusCodes', params);
	assert.ok(
		codes.some((c) => c.value === '404' && /404.*200/.test(c.name)),
		JSON.stringify(codes),
	);
	const bypasses = await editorList('resource-locator-results', 'searchBypassRecords', {
		...params,
		resource: 'applicationProtection.authBypass',
		operation: 'delete',
	});
	const bypass = bypasses.find((b) => b.name.startsWith('https://health.example.net/ping'));
	assert.ok(bypass && /^\d+$/.test(String(bypass.value)), JSON.stringify(bypasses));
	const entries = await editorList('options', 'blacklistEntries', {
		...params,
		resource: 'applicationProtection.ipBlacklist',
		operation: 'remove',
	});
	assert.ok(
		entries.some((e) => e.value === '192.0.2.0-192.0.2.3'),
		JSON.stringify(entries),
	);
	// Without the domain the lists are empty (the user types the value): nothing is asked of the service.
	const mark = lastSeq();
	assert.deepEqual(
		await editorList('resource-locator-results', 'searchStatusCodes', {
			resource: 'applicationProtection.statusCodes',
			operation: 'update',
		}),
		[],
	);
	assert.equal(since(mark).length, 0);
});

test('the Runbook node opens on a read and asks which signal to send', async () => {
	await page.locator('[data-test-id="node-creator-plus-button"]').click();
	await ui.search('runbook');
	const creator = page.locator('[data-test-id="node-creator"]');
	await creator.getByText('Security Service Runbook', { exact: true }).first().click();
	await creator.getByText('Describe a runbook', { exact: true }).click();
	await ui.ndv.locator('[data-test-id="parameter-input-runbook"]').waitFor();
	await ui.screenshot('runbook-describe');
	await ui.choose('operation', 'Signal');
	await ui.ndv.locator('[data-test-id="parameter-input-signal"]').waitFor();
	await ui.screenshot('runbook-signal');
	await ui.closePanel();
	await ui.screenshot('canvas');
});

test("Execute step: the output panel shows the service's data, with readable forms next to wire values", async () => {
	// The step runs on its own: the trigger before it is removed (its poll is not what this test is about).
	await ui.canvasNode('Security Service Trigger').click();
	await page.keyboard.press('Delete');
	await ui.canvasNode('Security Service Trigger').waitFor({ state: 'detached' });
	await ui.canvasNode('Get a customer').dblclick();
	await ui.choose('resource', 'Attack Dashboard');
	await ui.choose('operation', 'Check Under Attack');
	await ui.fill('site_id', ids.site_id);
	const mark = lastSeq();
	const executions = await ui.executionIds();
	const output = await ui.executeStep();
	await ui.screenshot('under-attack-output');
	// The node's output as the run stored it (what the panel shows of it is a rendering: screenshots only).
	const [item] = (await ui.nodeRun(executions)).items;
	const truth = await underAttackFromService();
	assert.equal(truth.status, 1, 'the simulator reports the attack');
	const calls = since(mark).filter((e) => e.opId === 'dashboard.isUnderAttack');
	assert.equal(calls.length, 2, 'one call by the node, one by this test');
	assert.equal(calls[0].path, `/api/specp/op/dashboard/site/${ids.site_id}/is_under_attack`);
	await ui.showOutput(output, 'JSON');
	await ui.screenshot('under-attack-json');
	assert.equal(item?.status, 1, JSON.stringify(item));
	assert.equal(item?.bps_size, truth.bps_size, JSON.stringify(item));
	assert.equal(item?.underAttack, true, JSON.stringify(item));
	await ui.showOutput(output, 'Table');
	await ui.screenshot('under-attack-table');
});

/** Waits (bounded) until the simulator's log satisfies `ok`. */
async function until(ok: () => boolean, what: string | (() => string)): Promise<void> {
	const deadline = Date.now() + 60_000;
	while (!ok()) {
		if (Date.now() >= deadline) assert.fail(`within 60 s: ${typeof what === 'string' ? what : what()}`);
		await page.waitForTimeout(200);
	}
}

/** Every credential test since `mark` asked for a new token and read the customer list with it: [appToken, list]×n. */
function assertFreshTokenTests(mark: number): void {
	const seen = since(mark).map((e) => `${e.opId}:${e.code}`);
	assert.ok(seen.length >= 2, 'at least one test ran');
	assert.deepEqual(
		seen,
		seen.map((_, i) => (i % 2 === 0 ? 'authorization.appToken:0' : 'customer.list:0')),
		'a fresh token each time',
	);
}

test("credential Test: a stored token that expired does not matter; a wrong Secret shows the service's message", async () => {
	// The step above stored an access token in the credential. The service now expires it.
	sim.sim.expireTokens();
	let mark = lastSeq();
	const modal = await ui.openCredential();
	const ok = modal.locator('[data-test-id="credentials-config-container-test-success"]');
	await ok.waitFor({ timeout: 60_000 }); // n8n tests an existing credential when it opens
	const opened = since(mark).length;
	// what the page asked n8n after the click (session 16 saw a Retry with no retest at the service: A-12)
	const asked: string[] = [];
	page.on('request', (r) => r.url().includes('/rest/credentials') && asked.push(`${r.method()} ${r.url()}`));
	await ok.getByRole('button', { name: 'Retry' }).click(); // the Test button of a tested credential
	await until(
		() => since(mark).length >= opened + 2,
		() => `the retest reached the service (page: ${asked})`,
	);
	await ok.waitFor();
	await ui.screenshot('credential-after-expiry');
	assertFreshTokenTests(mark);
	await ui.closeCredential();

	// The stored token really had expired: the node's next run is refused once, renews the token and succeeds.
	mark = lastSeq();
	await ui.executeStep(() => since(mark).length >= 3);
	assert.deepEqual(
		since(mark).map((e) => [e.opId, e.code]),
		[
			['dashboard.isUnderAttack', 40101],
			['authorization.appToken', 0],
			['dashboard.isUnderAttack', 0],
		],
	);

	// A wrong Secret while the credential holds a valid token: the Test asks for a new token and shows why it failed.
	await ui.openCredential();
	await ok.waitFor({ timeout: 60_000 });
	await modal.locator('[data-test-id="parameter-input-secret"] input').fill(WRONG_SECRET);
	mark = lastSeq();
	await ui.credentialSave.click();
	await until(() => since(mark).length > 0, 'the test of the wrong Secret');
	await modal
		.getByText(/Couldn.t connect with these settings/)
		.first()
		.waitFor();
	await modal.getByText('More details', { exact: true }).click(); // n8n folds the test's message under this link
	await modal
		.getByText(/secret: does not match the app \(code 40102\)/)
		.first()
		.waitFor();
	await ui.screenshot('credential-wrong-secret');
	assert.doesNotMatch(await modal.innerText(), new RegExp(WRONG_SECRET));
	assert.equal(await ok.isVisible(), false);
	const refused = since(mark).map((e) => `${e.opId}:${e.code}`);
	assert.ok(refused.length >= 1);
	assert.deepEqual(
		refused,
		refused.map(() => 'authorization.appToken:40102'),
		'the stored token was never used',
	);

	// Putting the right Secret back makes the Test pass again.
	await modal.locator('[data-test-id="parameter-input-secret"] input').fill(APP.secret);
	mark = lastSeq();
	await ui.credentialSave.click();
	await until(() => since(mark).some((e) => e.opId === 'customer.list'), 'the test of the fixed credential');
	await ok.waitFor();
	await ui.screenshot('credential-fixed');
	assertFreshTokenTests(mark);
	await ui.closeCredential();
});

test('bad input in the editor: the error names the field and the rule, and nothing is sent', async () => {
	await ui.choose('resource', 'IP Blacklist');
	await ui.choose('operation', 'Block');
	await ui.fill('ip_black_list', '203.0.113.300');
	await ui.fill('site_id', ids.site_id);
	await ui.fill('domain_port_id', ids.domain_port_id);
	const mark = lastSeq();
	const executions = await ui.executionIds();
	const output = await ui.executeStep();
	// The panel shows an error; what it says is read from the run.
	await output.locator('[data-test-id="node-error-message"]').waitFor();
	await ui.screenshot('bad-ip-error');
	const { error } = await ui.nodeRun(executions);
	assert.match(String(error?.message), /IP Address or Range/);
	assert.match(`${error?.message} ${error?.description ?? ''}`, /Nothing was sent/);
	assert.deepEqual(since(mark), [], 'the service received nothing, not even a token request');

	// A required number nobody typed is empty, not a silent 0 (a missing one is refused by the client, naming it).
	await ui.choose('resource', 'Status Code Overwrite');
	await ui.choose('operation', 'Create');
	for (const name of ['error_code', 'error_code_rewrite'])
		assert.equal(
			await ui.ndv.locator(`[data-test-id="parameter-input-${name}"] input`).inputValue(),
			'',
			`${name} starts empty`,
		);
	await ui.screenshot('required-number-empty');
	await ui.closePanel();
});

test('no console errors from our nodes', () => {
	assert.deepEqual(ourConsoleErrors, []);
});

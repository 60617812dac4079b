// End to end in the real n8n 2.40.7 on Node 24: the packed package installed into an n8n user folder,
// a credential and workflows imported with the n8n CLI, `n8n execute --id … --rawOutput`, outputs and the
// simulator's state asserted.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createClient } from '../../api/client.ts';
import { startSimulator } from '../../simulator/index.mts';
import {
	failedRun,
	freePort,
	makeN8nHome,
	n8nCli,
	nodeOutput,
	packPackage,
	parseRawOutput,
	type N8nHome,
} from './harness.mts';
import { chain, CREDENTIAL, httpNode, ssNode, USER_CREDENTIAL } from './workflows.mts';

const APP_ID = 'e2e-app';
const SECRET = 'e2e-secret-value-123';

let sim: Awaited<ReturnType<typeof startSimulator>>;
let home: N8nHome;
let work: string;
let ids: { customer_id: string; site_id: string; domain_port_id: string };
let userRefreshToken = '';

async function simGet(path: string): Promise<any> {
	const r = await fetch(`${sim.url}/__sim${path}`);
	return r.json();
}

async function execute(id: string) {
	const r = await n8nCli(home, ['execute', `--id=${id}`, '--rawOutput']);
	return r;
}

before(async () => {
	sim = await startSimulator({ port: 0, appId: APP_ID, secret: SECRET, seed: 7 });
	ids = await simGet('/ids');
	work = mkdtempSync(join(tmpdir(), 'secsvc-e2e-'));
	const tgz = packPackage(join(work, 'pack'));
	home = makeN8nHome(tgz);
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());

	// A user token: connect → code → access_token (gives the first refresh token).
	const client = createClient({
		baseUrl: sim.url,
		transport: async (req) => {
			const body =
				req.body?.kind === 'form'
					? req.body.parts.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
					: undefined;
			const res = await fetch(req.url, {
				method: req.method,
				headers: { ...req.headers, ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
				body,
				redirect: 'manual',
			});
			return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
		},
	});
	const { code } = await client.connect({
		app_id: APP_ID,
		redirect_uri: 'https://app.example.com/cb',
		state: 'e2e-state-1',
		customer_id: ids.customer_id,
	});
	const tok = (await client.call('authorization.accessToken', { app_id: APP_ID, secret: SECRET, code })) as {
		refresh_token: string;
	};
	userRefreshToken = tok.refresh_token;

	const creds = [
		{
			...CREDENTIAL,
			type: 'securityServiceApi',
			data: {
				baseUrl: sim.url,
				appId: APP_ID,
				secret: SECRET,
				grantType: 'app',
				authFailureCodes: '40101',
				accessToken: '',
				expiresAt: 0,
			},
		},
		{
			...USER_CREDENTIAL,
			type: 'securityServiceApi',
			data: {
				baseUrl: sim.url,
				appId: APP_ID,
				secret: SECRET,
				grantType: 'user',
				refreshToken: userRefreshToken,
				authFailureCodes: '40101',
				accessToken: '',
				expiresAt: 0,
			},
		},
	];
	writeFileSync(join(work, 'creds.json'), JSON.stringify(creds));
	const r1 = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
	assert.equal(r1.code, 0, `import:credentials failed:\n${r1.stdout}\n${r1.stderr}`);

	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const now = Math.floor(Date.now() / 1000);
	const ymd = (t: number) => new Date(t * 1000).toISOString().slice(0, 19).replace('T', ' ');
	const workflows = [
		chain('wfApChange0001', 'AP change', [
			ssNode('Add blacklist', {
				resource: 'applicationProtection.ipBlacklist',
				operation: 'add',
				ip_black_list: '198.51.100.0-198.51.100.255',
				...dp,
			}),
			ssNode('Switch off p_wbl', {
				resource: 'applicationProtection.switch',
				operation: 'set',
				...dp,
				name: { __rl: true, mode: 'list', value: 'p_wbl' },
				enable: 0,
			}),
			ssNode('Read blacklist', { resource: 'applicationProtection.ipBlacklist', operation: 'get', ...dp }),
		]),
		chain('wfPagedList001', 'Paged list', [
			ssNode('All customers', { resource: 'customer', operation: 'list', returnAll: true }),
		]),
		chain('wfPagedEvents1', 'Paged DDoS events over 75 days', [
			ssNode('Events', {
				resource: 'dashboard',
				operation: 'ddosEvents',
				site_id: ids.site_id,
				returnAll: true,
				additionalFields: { start_time: ymd(now - 75 * 86400), end_time: ymd(now), num: '5' },
			}),
		]),
		// (Conditionally required fields left empty are caught by n8n itself before the run; these reach our validation.)
		chain('wfValidation01', 'Validation error (continue on fail)', [
			ssNode('Traffic', { resource: 'dashboard', operation: 'currentTraffic', site_id: ids.site_id }),
			ssNode(
				'Bad status code',
				{
					resource: 'applicationProtection.statusCodes',
					operation: 'create',
					...dp,
					error_code: 302,
					error_code_rewrite: 200,
					error_page_type: 0,
				},
				{ continueOnFail: true },
			),
		]),
		chain('wfValidation02', 'Validation error (stops)', [
			ssNode('Traffic 2', { resource: 'dashboard', operation: 'currentTraffic', site_id: ids.site_id }),
			ssNode('Bad whitelist', {
				resource: 'applicationProtection.ipWhitelist',
				operation: 'add',
				...dp,
				ip_white_list: '10.0.0.300',
			}),
		]),
		chain('wfTokenExpiry1', 'Token expires mid-workflow (user token)', [
			ssNode(
				'Before',
				{ resource: 'applicationProtection.authBase.get'.split('.').slice(0, 2).join('.'), operation: 'get', ...dp },
				{ credential: USER_CREDENTIAL },
			),
			httpNode('Expire tokens', `${sim.url}/__sim/tokens/expire`),
			ssNode(
				'After',
				{ resource: 'applicationProtection.authBase', operation: 'set', ...dp, duration: 900, threshold_tps: 321 },
				{ credential: USER_CREDENTIAL },
			),
			httpNode('Expire again', `${sim.url}/__sim/tokens/expire`),
			ssNode(
				'Again',
				{ resource: 'applicationProtection.authBase', operation: 'get', ...dp },
				{ credential: USER_CREDENTIAL },
			),
		]),
	];
	const wfDir = join(work, 'workflows');
	mkdirSync(wfDir);
	for (const wf of workflows) writeFileSync(join(wfDir, `${wf.id}.json`), JSON.stringify(wf));
	const r2 = await n8nCli(home, ['import:workflow', '--separate', `--input=${wfDir}`]);
	assert.equal(r2.code, 0, `import:workflow failed:\n${r2.stdout}\n${r2.stderr}`);
});

after(async () => {
	await sim?.close();
	home?.cleanup();
	if (work) rmSync(work, { recursive: true, force: true });
});

test('app-protection change: blacklist add + switch off, read back; simulator state changed', async () => {
	const r = await execute('wfApChange0001');
	assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
	const run = parseRawOutput(r.stdout);
	assert.deepEqual(nodeOutput(run, 'Add blacklist'), [
		{
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
			entries: ['198.51.100.0-198.51.100.255'],
			blocked: ['198.51.100.0-198.51.100.255'],
			refused: [],
			success: true,
			operation: 'IP Blacklist › Block',
			summary: `IP Blacklist › Block: blocked 198.51.100.0-198.51.100.255 (Site ID ${ids.site_id}, Domain-Port ID ${ids.domain_port_id})`,
		},
	]);
	const entries = nodeOutput(run, 'Read blacklist');
	assert.ok(
		entries.some((e) => e.start_ip === '198.51.100.0' && e.end_ip === '198.51.100.255'),
		JSON.stringify(entries),
	);
	const state = await simGet('/state');
	const dp = state.domainPorts.find((d: any) => d.domain_port_id === ids.domain_port_id);
	assert.ok(JSON.stringify(dp).includes('198.51.100.0'), 'simulator holds the new blacklist range');
	assert.equal(dp.policy.switches.p_wbl.enable, 0, 'p_wbl switched off in the simulator');
	const adds = await simGet('/requests?op=applicationProtection.ipBlacklist.add');
	assert.equal(adds.length, 1);
	assert.equal(adds[0].code, 0);
});

test('paged list: customer.list with Return All walks every page', async () => {
	const state = await simGet('/state');
	const r = await execute('wfPagedList001');
	assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
	const out = nodeOutput(parseRawOutput(r.stdout), 'All customers');
	assert.equal(out.length, state.customers.length);
	assert.deepEqual(new Set(out.map((c) => c.customer_id)), new Set(state.customers.map((c: any) => c.customer_id)));
	const pages = await simGet('/requests?op=customer.list');
	assert.ok(pages.length >= 2, `expected several page requests, got ${pages.length}`);
});

test('paged, split time range: ddos_events over 75 days → 3 windows of ≤ 31 days, pages of 5, merged', async () => {
	await fetch(`${sim.url}/__sim/requests`, { method: 'DELETE' });
	const r = await execute('wfPagedEvents1');
	assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
	const out = nodeOutput(parseRawOutput(r.stdout), 'Events');
	const reqs = await simGet('/requests?op=dashboard.ddosEvents');
	const windows = new Set(reqs.map((q: any) => `${q.query.start_time}|${q.query.end_time}`));
	assert.equal(windows.size, 3, [...windows].join('\n'));
	assert.ok(reqs.every((q: any) => q.code === 0));
	assert.equal(new Set(out.map((e) => e.alert_id)).size, out.length, 'no duplicates');
	assert.ok(out.length > 0, 'seeded history has events');
});

test('validation error: continueOnFail gives the error naming the field; nothing is sent', async () => {
	await fetch(`${sim.url}/__sim/requests`, { method: 'DELETE' });
	const r = await execute('wfValidation01');
	assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
	const [item] = nodeOutput(parseRawOutput(r.stdout), 'Bad status code');
	assert.match(
		item.error,
		/Status Code Overwrite › Create: Status Code must be an HTTP code from 400 to 417 or from 500 to 505 \(§4\.3\.4\)\. Nothing was sent\./,
	);
	assert.deepEqual(
		item.issues.map((i: any) => i.field),
		['error_code'],
		JSON.stringify(item),
	);
	assert.equal(
		(await simGet('/requests?op=applicationProtection.statusCodes.create')).length,
		0,
		'no request reached the service',
	);

	const r2 = await execute('wfValidation02');
	assert.notEqual(r2.code, 0, 'the workflow fails without continueOnFail');
	assert.match(failedRun(r2).error, /IP Whitelist › Allow: IP Address or Range must be an IPv4 address/);
	assert.equal((await simGet('/requests?op=applicationProtection.ipWhitelist.add')).length, 0);
});

test('token expires mid-workflow: forced renewal, one retry, rotated refresh token saved', async () => {
	await fetch(`${sim.url}/__sim/requests`, { method: 'DELETE' });
	const r = await execute('wfTokenExpiry1');
	assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
	const run = parseRawOutput(r.stdout);
	assert.equal(nodeOutput(run, 'Again')[0].threshold_tps, 321);
	const refreshes = await simGet('/requests?op=authorization.refreshToken');
	assert.equal(refreshes.length, 3, 'initial token + one renewal per expiry');
	assert.ok(
		refreshes.every((q: any) => q.code === 0),
		'every refresh used the newest refresh token',
	);
	const rejected = (await simGet('/requests?op=applicationProtection.authBase.set')).map((q: any) => q.code);
	assert.deepEqual(rejected, [40101, 0], 'rejected once, renewed, retried once');

	// The credential in n8n's database holds the newest refresh token (the old ones are dead).
	const ex = await n8nCli(home, [
		'export:credentials',
		`--id=${USER_CREDENTIAL.id}`,
		'--decrypted',
		`--output=${join(work, 'out.json')}`,
	]);
	assert.equal(ex.code, 0, ex.stderr);
	const { readFileSync } = await import('node:fs');
	const saved = JSON.parse(readFileSync(join(work, 'out.json'), 'utf8'))[0].data;
	assert.notEqual(saved.refreshToken, userRefreshToken, 'refresh token was rotated and saved');
	assert.ok(saved.expiresAt > Date.now(), 'expiry stored');
	// Nothing secret in the execution data.
	assert.ok(
		!r.stdout.includes(saved.refreshToken) && !r.stdout.includes(SECRET) && !r.stdout.includes(saved.accessToken),
	);
});

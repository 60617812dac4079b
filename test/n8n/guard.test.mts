// The blast-radius guard in n8n (in-process runner: n8n-core's WorkflowExecute, n8n's CredentialsHelper and request
// helpers), against the simulator: the Security Service node refuses 0.0.0.0/0, a credential-protected range and
// the site's own address before any write is sent, and records an override in its output; the same node run as an
// AI tool (n8n's Tool variant of a usableAsTool node, run by n8n's Tool Executor with the arguments a model would
// give through $fromAI) refuses the same way. The allow side and user-agent patterns: IP Whitelist › Allow 0.0.0.0/0
// and a pattern matching every client are refused naming the field's label and the rule; the site's own network
// (198.51.100.16/28 of site 20001 in the simulator, which the spec shows no operation for) declared once in the
// credential's Protected Ranges is never blocked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getOperation } from '../../api/catalog/index.ts';
import { startSimulator } from '../../simulator/index.mts';
import { chain, ensureBuilt, ssNode, startRunner, toNodeParameters, type Runner } from './inprocess-driver.mts';
import { manualTrigger } from './workflows.mts';

const APP = { appId: 'guard-app', secret: 'guard-secret-value-42' };
let sim: Awaited<ReturnType<typeof startSimulator>>;
let runner: Runner;
let ids: ReturnType<typeof sim.sim.firstIds>;
let siteIp: string;
const ADD = getOperation('applicationProtection.ipBlacklist.add');
const ALLOW = getOperation('applicationProtection.ipWhitelist.add');
const UA = getOperation('applicationProtection.uaBlacklist.add');

before(async () => {
	ensureBuilt();
	sim = await startSimulator({ port: 0, ...APP, seed: 11 });
	runner = await startRunner();
	await runner.setCredential('cred-app', 'Security Service (simulator)', {
		baseUrl: sim.url,
		appId: APP.appId,
		secret: APP.secret,
		grantType: 'app',
		authFailureCodes: '40101',
		protectedRanges: '192.0.2.0/28, 198.51.100.77, 198.51.100.16/28',
		accessToken: '',
		expiresAt: 0,
	});
	ids = sim.sim.firstIds();
	siteIp = (sim.sim.world.sites.get(ids.site_id) as { site_ip: string }).site_ip;
});
after(async () => {
	await runner?.close();
	await sim?.close();
});

const posts = () =>
	sim.sim.requests().filter((r) => r.method === 'POST' && r.opId === 'applicationProtection.ipBlacklist.add');
const block = (entry: string, extra: Record<string, unknown> = {}) =>
	chain('block', [
		ssNode(
			'Block',
			toNodeParameters(ADD, {
				site_id: ids.site_id,
				domain_port_id: ids.domain_port_id,
				ip_black_list: entry,
				...extra,
			}),
		),
	]);

test("node: 0.0.0.0/0 and a credential-protected range refused with 0 requests; the site's own address refused after reading it (no write)", async () => {
	const before = sim.sim.requests().length;
	const whole = await runner.run(block('0.0.0.0/0'));
	assert.equal(whole.status, 'error');
	// issue 40: the first rule in the message, every rule once in the details, field labels (never maxPrefix or
	// allowWideBlock, which are the CLI's and the worker's names).
	assert.match(
		whole.error?.message ?? '',
		/^IP Blacklist › Block: IP Address or Range 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest block allowed \(\/16, 65536 addresses\); fill Allow Wide Block \(Reason\) to lift this rule \(and (\d+) more: see the details\)\. Nothing was sent\.$/,
	);
	const details = String(whole.error?.description ?? '').split('\n');
	assert.match(whole.error?.message ?? '', new RegExp(`\\(and ${details.length - 1} more: `));
	assert.equal(new Set(details).size, details.length, `each rule once:\n${details.join('\n')}`);
	assert.ok(
		details.slice(1).every((d) => /^IP Address or Range 0\.0\.0\.0\/0 overlaps the (special|protected) range /.test(d)),
		details.join('\n'),
	);
	assert.doesNotMatch(`${whole.error?.message}\n${details.join('\n')}`, /maxPrefix|allowWideBlock|ip_black_list/);
	const prot = await runner.run(block('192.0.2.5'));
	assert.match(
		prot.error?.message ?? '',
		/192\.0\.2\.5 overlaps the protected range 192\.0\.2\.0\/28 \(credential Protected Ranges\): never blocked/,
	);
	assert.equal(sim.sim.requests().length, before, 'nothing at all was sent: not even a token request');

	const own = await runner.run(block(`${siteIp.split('.').slice(0, 3).join('.')}.0/24`));
	assert.match(
		own.error?.message ?? '',
		new RegExp(`overlaps the site's own address ${siteIp.replace(/\./g, '\\.')} \\(site_ip of DDoS event`),
	);
	const sent = sim.sim
		.requests()
		.slice(before)
		.map((r) => `${r.method} ${r.opId}`);
	assert.deepEqual(
		sent.filter((x) => !x.includes('authorization.')).sort(),
		['GET dashboard.activeMitigation', 'GET dashboard.ddosEvents'],
		'only the own-address lookup',
	);
	assert.equal(posts().length, 0);
});

test('node: the override lets a /15 through, recorded in the output; it never lifts a special range', async () => {
	const loop = await runner.run(block('127.0.0.0/8', { allowWideBlock: 'lab test' }));
	assert.match(loop.error?.message ?? '', /127\.0\.0\.0\/8 overlaps the special range 127\.0\.0\.0\/8, loopback/);
	const wide = await runner.run(block('10.0.0.0/15', { allowWideBlock: 'botnet spread over a /15' }));
	assert.equal(wide.status, 'success', JSON.stringify(wide.error));
	assert.deepEqual(wide.runData.Block[0].items, [
		{
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
			entries: ['10.0.0.0/15'],
			blocked: ['10.0.0.0-10.1.255.255'],
			refused: [],
			success: true,
			operation: 'IP Blacklist › Block',
			summary: `IP Blacklist › Block: blocked 10.0.0.0-10.1.255.255 (Site ID ${ids.site_id}, Domain-Port ID ${ids.domain_port_id})`,
			wideBlockOverride: { rule: 'widest prefix (/16)', entries: ['10.0.0.0/15'], reason: 'botnet spread over a /15' },
		},
	]);
	assert.equal(posts().length, 1);
});

test("node: IP Whitelist › Allow 0.0.0.0/0 and a user-agent pattern matching every client refused by label and rule (nothing sent), a /15 allowed under the recorded override; the site's own network is never blocked", async () => {
	const before = sim.sim.requests().length;
	const at = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const allow = await runner.run(
		chain('allow', [ssNode('Allow', toNodeParameters(ALLOW, { ...at, ip_white_list: '0.0.0.0/0' }))]),
	);
	assert.equal(allow.status, 'error');
	assert.match(
		allow.error?.message ?? '',
		/^IP Whitelist › Allow: IP Address or Range 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest entry an allow list may take \(\/16, 65536 addresses\); fill Allow Wide Entry \(Reason\) to lift this rule \(and 5 more: see the details\)\. Nothing was sent\.$/,
	);
	assert.match(
		String(allow.error?.description ?? ''),
		/\nIP Address or Range 0\.0\.0\.0\/0 overlaps the special range 0\.0\.0\.0\/8, "this network" \(RFC 1122\): never allowed\n/,
	);
	const ua = await runner.run(chain('ua', [ssNode('UA', toNodeParameters(UA, { ...at, ua_regex: ['BadBot', '.*'] }))]));
	assert.match(
		ua.error?.message ?? '',
		/^User-Agent Blacklist › Block: User-Agent Patterns \(ua_regex\.1\) ".\*" matches every user agent .*: it would block every client of the site; never sent/,
	);
	assert.equal(sim.sim.requests().length, before, 'nothing at all was sent: not even a token request');
	const wide = await runner.run(
		chain('allow wide', [
			ssNode(
				'Allow',
				toNodeParameters(ALLOW, { ...at, ip_white_list: '10.0.0.0/15', allowWideBlock: 'the partner network' }),
			),
		]),
	);
	assert.equal(wide.status, 'success', JSON.stringify(wide.error));
	assert.deepEqual(wide.runData.Allow[0].items[0].wideBlockOverride, {
		rule: 'widest prefix (/16)',
		entries: ['10.0.0.0/15'],
		reason: 'the partner network',
	});
	const net = (sim.sim.world.sites.get(ids.site_id) as { networks: { cidr: string; hosts: { ip: string }[] }[] })
		.networks[0];
	assert.deepEqual([net.cidr, ...net.hosts.map((h) => h.ip)], ['198.51.100.16/28', '198.51.100.17', '198.51.100.18']);
	for (const entry of [net.cidr, net.hosts[1].ip]) {
		const own = await runner.run(block(entry));
		assert.match(
			own.error?.message ?? '',
			/overlaps the protected range 198\.51\.100\.16\/28 \(credential Protected Ranges\): never blocked/,
		);
	}
	assert.deepEqual(
		sim.sim
			.requests()
			.slice(before)
			.filter((r) => r.method !== 'GET' && r.opId !== 'authorization.appToken')
			.map((r) => `${r.opId} ${JSON.stringify(r.body)}`),
		[`applicationProtection.ipWhitelist.add {"ip_white_list":"10.0.0.0-10.1.255.255"}`],
		'no write but the allowed one under the override',
	);
});

/** Manual Trigger → n8n's Tool Executor, with the Security Service node as its AI tool (ai_tool connection). */
function asTool(args: Record<string, unknown>) {
	const trigger = manualTrigger('40000000-0000-4000-8000-000000000001', 'Start');
	const tool = {
		id: '40000000-0000-4000-8000-000000000002',
		name: 'Block IP',
		type: 'CUSTOM.securityServiceTool',
		typeVersion: 1,
		position: [200, 500],
		parameters: {
			...toNodeParameters(ADD, { site_id: ids.site_id, domain_port_id: ids.domain_port_id }),
			ip_black_list: "={{ $fromAI('ip_black_list', 'The attacker IPv4 source to block', 'string') }}",
		},
		credentials: { securityServiceApi: { id: 'cred-app', name: 'Security Service (simulator)' } },
	};
	const executor = {
		id: '40000000-0000-4000-8000-000000000003',
		name: 'Tool Executor',
		type: '@n8n/n8n-nodes-langchain.toolExecutor',
		typeVersion: 1,
		position: [400, 300],
		parameters: { query: JSON.stringify({ Block_IP: args }), toolName: '', node: 'Block IP' },
	};
	return {
		name: 'as tool',
		nodes: [trigger, tool, executor],
		connections: {
			Start: { main: [[{ node: 'Tool Executor', type: 'main', index: 0 }]] },
			'Block IP': { ai_tool: [[{ node: 'Tool Executor', type: 'ai_tool', index: 0 }]] },
		},
	};
}

test("the node as an AI tool: the model's 0.0.0.0/0 and the site's own address are refused by the same guard; an attacker is blocked", async () => {
	const n = posts().length;
	const whole = await runner.run(asTool({ ip_black_list: '0.0.0.0/0' }));
	assert.equal(whole.status, 'error');
	assert.match(
		whole.error?.message ?? '',
		/Error executing tool: .*0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest block allowed/,
	);
	const own = await runner.run(asTool({ ip_black_list: siteIp }));
	assert.match(own.error?.message ?? '', /overlaps the site's own address/);
	assert.equal(posts().length, n, 'nothing written');
	const ok = await runner.run(asTool({ ip_black_list: '198.18.5.5' }));
	assert.equal(ok.status, 'success', JSON.stringify(ok.error));
	assert.equal(posts().length, n + 1);
	assert.equal(posts().at(-1)?.opId, 'applicationProtection.ipBlacklist.add');
	// what the model gets back: the node's output items as the tool's JSON answer
	assert.deepEqual(
		ok.runData['Tool Executor'][0].items.map((i) => JSON.parse(String(i))),
		[
			[
				{
					site_id: ids.site_id,
					domain_port_id: ids.domain_port_id,
					entries: ['198.18.5.5'],
					blocked: ['198.18.5.5'],
					refused: [],
					success: true,
					operation: 'IP Blacklist › Block',
					summary: `IP Blacklist › Block: blocked 198.18.5.5 (Site ID ${ids.site_id}, Domain-Port ID ${ids.domain_port_id})`,
				},
			],
		],
	);
	assert.equal(
		ok.runData['Block IP'][0].executionStatus,
		'success',
		'the node ran as a tool (n8n records the tool run under its name)',
	);
});

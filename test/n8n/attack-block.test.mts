// The README's headline workflow (examples/n8n/attack-started-block.json: Security Service Trigger "On attack
// started" → IP Blacklist › Add with the item's attacking ranges) in the real n8n 2.40.7 in server mode (`n8n start`,
// the packed package in ~/.n8n/nodes, the file imported as it is and published; n8n polls at activation, then every
// minute at a random second: it refuses shorter polls). The activation poll only records what exists and nothing is
// blocked; after the simulator's attack starts, the next poll's execution blocks the
// attacking sources, merged into ranges, on the domain-port given on the trigger — read back from the simulator.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { aggregate, formatRange, parseAll } from '../../api/ranges.ts';
import { startSimulator } from '../../simulator/index.mts';
import { APP_ID, ATTACK_SOURCES, operatorClient, SECRET } from '../temporal/helpers.mts';
import { startN8nServer, type N8nServer } from './editor-server.mts';
import { n8nCli, packPackage, ROOT } from './harness.mts';
import { scratchDir } from '../helpers/scratch.mts';

const WF_ID = 'wfAttackBlock001';
let sim: Awaited<ReturnType<typeof startSimulator>>;
let n8n: N8nServer;
const log = (m: string) => process.stderr.write(`[attack → block] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(async () => {
	sim = await startSimulator({ port: 0, appId: APP_ID, secret: SECRET, seed: 7 });
	const ids = sim.sim.firstIds();
	const work = scratchDir('secsvc-attack-block-');
	const wf = JSON.parse(readFileSync(join(ROOT, 'examples/n8n/attack-started-block.json'), 'utf8'));
	const trigger = wf.nodes.find((n: { type: string }) => n.type.endsWith('.securityServiceTrigger'));
	assert.equal(trigger.parameters.site_id, ids.site_id, "the example names the simulator's seeded site");
	assert.equal(trigger.parameters.domainPortIds, ids.domain_port_id);
	writeFileSync(join(work, 'wf.json'), JSON.stringify([{ ...wf, id: WF_ID, active: false }]));
	writeFileSync(
		join(work, 'creds.json'),
		JSON.stringify([
			{
				id: 'secsvcCred001',
				name: 'Security Service',
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
		]),
	);
	n8n = await startN8nServer(packPackage(join(work, 'pack')), async (home) => {
		for (const args of [
			['import:credentials', `--input=${join(work, 'creds.json')}`],
			['import:workflow', `--input=${join(work, 'wf.json')}`],
			['publish:workflow', `--id=${WF_ID}`],
		]) {
			const r = await n8nCli(home, args);
			assert.equal(r.code, 0, `n8n ${args[0]} failed:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
		}
	});
});

after(async () => {
	await n8n?.stop();
	await sim?.close();
});

function blockPosts(): { ip_black_list?: string }[] {
	return sim.sim
		.requests({ op: 'applicationProtection.ipBlacklist.add' })
		.map((r) => (r.body ?? {}) as { ip_black_list?: string });
}

test('attack started → the trigger item carries the attacking ranges → Block adds them on the domain-port', async () => {
	const ids = sim.sim.firstIds();
	await sleep(3_000); // n8n is ready after activating the workflow: its first poll has recorded what exists
	assert.equal(blockPosts().length, 0, 'nothing blocked before the attack');
	log('attack starts');
	sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const deadline = Date.now() + 80_000; // the next poll: within a minute
	while (blockPosts().length === 0 && Date.now() < deadline) await sleep(500);
	await sleep(3_000); // the rest of the item's ranges
	const posts = blockPosts();
	assert.ok(posts.length > 0, `no block within 80 s of the attack:\n${n8n.log().slice(-3000)}`);
	const op = operatorClient(sim.url);
	try {
		const list = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
		})) as {
			p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string; end_ip?: string }[] } };
		};
		const listed = list.p_info.ipv4.black_soc.map((e) =>
			e.start_ip && e.end_ip ? `${e.start_ip}-${e.end_ip}` : String(e.ip),
		);
		log(`blocked: ${posts.map((p) => p.ip_black_list).join(', ')}`);
		// Each POST is one merged start-end range, and every one of them is now on the domain-port's blacklist.
		const sent = posts.map((p) => String(p.ip_black_list));
		const merged = aggregate(parseAll(sent).ranges).map(formatRange);
		assert.equal(merged.length, sent.length, `the ranges sent are already merged: ${sent.join(', ')}`);
		for (const s of sent)
			assert.ok(
				listed.some(
					(l) =>
						aggregate(parseAll([l]).ranges).map(formatRange)[0] === aggregate(parseAll([s]).ranges).map(formatRange)[0],
				),
				`${s} is on the blacklist (${listed.join(', ')})`,
			);
		// The sources blocked are the attack's own (the simulator's attack sources), never the site's address.
		const attack = aggregate(parseAll(ATTACK_SOURCES.map((a) => ('ip' in a ? a.ip : a.cidr) as string)).ranges);
		for (const r of parseAll(sent).ranges)
			assert.ok(
				attack.some((a) => a.start <= r.start && r.end <= a.end),
				`${formatRange(r)} is an attacking source`,
			);
	} finally {
		await op.close();
	}
});

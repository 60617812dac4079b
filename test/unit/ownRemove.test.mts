/**
 * An owner's remove names only its own entry (api/catalog/ipv4.ts `ownListed`). Our adds POST `start-end`; a person's
 * add from the console of the same address is listed in its own notation, as a second entry. A playbook's remove —
 * a runbook's revert (worker/src/activities/exactWrites.mts), an expiring block's end (workflows/blocks/) — DELETEs its
 * own notation and never the other one, also on a retry whose earlier attempt's answer was lost (interleave seed 138:
 * the retry found only the console's `203.0.113.20` and DELETEd it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../worker/src/activities/operations.mts';
import { createBlocksActivities } from '../../workflows/blocks/activities.mts';
import { BLOCKS_ACTIVITY } from '../../workflows/blocks/shared.mts';
import { listEntryText, type Ipv4ListEntry } from '../../api/catalog/ipv4.ts';
import '../helpers/started.mts';
import { appSimulator } from '../helpers/appSimulator.mts';

const app = appSimulator({ appId: 'own-remove-app', secret: 'own-remove-secret-1' });
const REMOVE = 'applicationProtection.ipBlacklist.remove';

const dp = () => {
	const ids = app.sim.sim.firstIds();
	return { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
};
const listed = async () => {
	const r = await app
		.client()
		.call<{ p_info: { ipv4: { black_soc: Ipv4ListEntry[] } } }>('applicationProtection.ipBlacklist.get', dp());
	return r.p_info.ipv4.black_soc.map(listEntryText);
};
const consoleAdd = (entry: string) =>
	fetch(`${app.sim.url}/__sim/console`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ op: 'applicationProtection.ipBlacklist.add', params: { ...dp(), ip_black_list: entry } }),
	}).then((r) => assert.equal(r.status, 200));
const deletes = (since: number) => app.sim.sim.requests({ op: REMOVE, since }).map((r) => r.query.ip_black_list);
const seq = () => app.sim.sim.requests().at(-1)?.seq ?? 0;

async function scene(entry: string) {
	await app.client().call('applicationProtection.ipBlacklist.add', { ...dp(), ip_black_list: entry }); // ours
	await consoleAdd(entry); // a person's, the same address in its own notation
	const both = await listed();
	assert.ok(both.includes(entry) && both.includes(`${entry}-${entry}`), `both notations listed: ${both.join(', ')}`);
}

test("a revert's remove DELETEs our start-end entry, not the console's address; its retry sends nothing", async () => {
	await scene('203.0.113.20');
	const act = createActivities(app.client())[REMOVE];
	for (const attempt of [1, 2]) {
		const since = seq();
		const run = new MockActivityEnvironment({ attempt }).run(act, { ...dp(), ip_black_list: ['203.0.113.20'] });
		const r = (await run) as { removed: string[]; absent: string[] };
		assert.deepEqual(deletes(since), attempt === 1 ? ['203.0.113.20-203.0.113.20'] : [], `attempt ${attempt}`);
		assert.deepEqual(r.removed, attempt === 1 ? ['203.0.113.20'] : []);
	}
	assert.deepEqual(await listed(), ['203.0.113.20'], "the console's entry stays listed");
});

test("an expiring block's end (one and many) DELETEs its own entry, never the console's notation", async () => {
	const acts = createBlocksActivities(app.client());
	for (const [i, run] of [
		(e: string) => acts[BLOCKS_ACTIVITY.remove]({ ...dp(), entry: e }),
		(e: string) => acts[BLOCKS_ACTIVITY.removeMany]({ ...dp(), entries: [e] }),
	].entries()) {
		const entry = `198.51.100.${10 + i}`;
		await scene(entry);
		for (const attempt of [1, 2]) {
			const since = seq();
			await new MockActivityEnvironment({ attempt }).run(run, entry);
			assert.deepEqual(deletes(since), attempt === 1 ? [`${entry}-${entry}`] : [], `${entry} attempt ${attempt}`);
		}
		assert.ok((await listed()).includes(entry), `the console's ${entry} stays listed`);
	}
});

/**
 * The interleaving test's invariant (test/temporal/interleave/invariant.mts) on hand-written request logs: the issue's
 * repro is caught by both halves, a correct revert passes, the person wins after the runbook's write, a write that
 * changes nothing moves no ownership, a block may remove what a runbook handed to it, and writes that undo each other
 * between two of the runbook's reads are no writes for it (it cannot observe them).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LogEntry } from '../../simulator/index.mts';
import { check, writesOf, type Actor, type Values } from '../temporal/interleave/invariant.mts';
import { generate } from '../temporal/interleave/schedule.mts';

const BL = '/api/specp/policy/appshield/site/20001/domain-port/30001/ip-black-list';
const SW = '/api/specp/policy/appshield/site/20001/domain-port/30001/switch';
let seq = 0;
const add = (caller: string, ip: string): LogEntry =>
	entry(caller, 'applicationProtection.ipBlacklist.add', 'POST', BL, { ip_black_list: ip });
const del = (caller: string, ips: string): LogEntry => ({
	...entry(caller, 'applicationProtection.ipBlacklist.remove', 'DELETE', BL, undefined),
	query: { ip_black_list: ips, access_token: '***' },
});
const sw = (caller: string, enable: number): LogEntry =>
	entry(caller, 'applicationProtection.switch.set', 'POST', SW, { name: 'p_auth', enable: String(enable) });
const poll = (caller: string): LogEntry => entry(caller, 'applicationProtection.switch.list', 'GET', SW, undefined);
function entry(caller: string, opId: string, method: string, path: string, body: unknown): LogEntry {
	return { seq: ++seq, time: 0, opId, method, path, query: {}, body, status: 200, code: 0, caller };
}
const actorOf = (caller: string, key: string): Actor | undefined =>
	caller === 'app'
		? 'runbook'
		: caller === 'user:P'
			? key.startsWith('bl.')
				? 'block'
				: 'drift'
			: caller === 'console'
				? 'console'
				: 'n8n';
const run = (initial: Values, final: Values, log: LogEntry[]) =>
	check(
		initial,
		final,
		log.flatMap((e) => writesOf(e, actorOf)),
	);
const listed = (...ips: string[]): Values =>
	new Map([['switch.30001.p_auth', 0], ...ips.map((ip) => [`bl.30001.${ip}`, 1] as [string, number])]);

test("the issue's repro: sources listed by n8n after the snapshot, DELETEd by the revert", () => {
	const v = run(listed(), listed(), [
		add('user:N', '198.18.0.1'),
		add('user:N', '198.18.0.2'),
		del('app', '198.18.0.1,198.18.0.2'),
	]);
	assert.deepEqual(
		v.map((x) => `${x.rule} ${x.key}`),
		[
			'(b) delete bl.30001.198.18.0.1',
			'(b) delete bl.30001.198.18.0.2',
			'(a) final value bl.30001.198.18.0.1',
			'(a) final value bl.30001.198.18.0.2',
		],
	);
	assert.match(v[0].text, /runbook DELETEd bl\.30001\.198\.18\.0\.1 at seq \d+; its value listed was written by n8n/);
});

test('a revert of what the runbook wrote, and only that, passes', () => {
	const log = [
		add('console', '198.18.0.9'),
		add('app', '198.18.0.1'),
		sw('app', 1),
		sw('app', 0),
		del('app', '198.18.0.1'),
	];
	assert.deepEqual(run(listed(), listed('198.18.0.9'), log), []);
});

test('the person wins after our write: re-applying over them, or reverting their value, is a violation', () => {
	const reapply = [sw('app', 1), sw('console', 0), sw('app', 1), sw('app', 0)];
	assert.deepEqual(
		run(listed(), listed(), reapply).map((x) => x.rule),
		['(b) overwrite'],
		'the re-apply overwrote the console; the final 0 happens to be what the console wrote',
	);
	const kept = [sw('app', 1), sw('user:N', 0), sw('user:N', 1)];
	assert.deepEqual(run(listed(), new Map([['switch.30001.p_auth', 1]]), kept), [], "n8n's 1 kept");
	const reverted = [...kept, sw('app', 0)];
	assert.deepEqual(
		run(listed(), listed(), reverted).map((x) => x.rule),
		['(b) overwrite', '(a) final value'],
	);
	// removed and re-added by a person after our add: theirs now; the revert must leave it
	const readded = [
		add('app', '198.18.0.1'),
		del('user:N', '198.18.0.1'),
		add('user:N', '198.18.0.1'),
		del('app', '198.18.0.1'),
	];
	assert.deepEqual(
		run(listed(), listed(), readded).map((x) => x.rule),
		['(b) delete', '(a) final value'],
	);
});

test('a request that changes nothing moves no ownership; a block may remove what a runbook handed over', () => {
	// n8n "adds" an entry the runbook had listed: the service keeps no trace, the runbook still owns it
	assert.deepEqual(
		run(listed(), listed(), [add('app', '198.18.0.1'), add('user:N', '198.18.0.1'), del('app', '198.18.0.1')]),
		[],
	);
	// the runbook's first write to a setting a person had just set to that value owns nothing: its revert is a violation
	assert.deepEqual(
		run(listed(), listed(), [sw('console', 1), sw('app', 1), sw('app', 0)]).map((x) => x.rule),
		['(b) overwrite', '(a) final value'],
	);
	assert.deepEqual(run(listed(), listed(), [add('app', '198.18.0.1'), del('user:P', '198.18.0.1')]), []);
	// a block removing the console's entry is not
	assert.deepEqual(
		run(listed(), listed(), [add('console', '198.18.0.1'), del('user:P', '198.18.0.1')]).map((x) => x.rule),
		['(b) delete'],
	);
});

test('a setting flipped away and back between two of the runbook reads is no write for it; one it saw is', () => {
	// n8n sets 0 and the console 1 again between two polls: the runbook cannot tell, so its value is still its own
	const unseen = [poll('app'), sw('app', 1), poll('app'), sw('user:N', 0), sw('console', 1), poll('app'), sw('app', 0)];
	assert.deepEqual(run(listed(), listed(), unseen), []);
	// a poll between the two writes saw n8n's 0: the console's 1 is the person's, reverting it is a violation
	const seen = [poll('app'), sw('app', 1), sw('user:N', 0), poll('app'), sw('console', 1), poll('app'), sw('app', 0)];
	assert.deepEqual(
		run(listed(), listed(), seen).map((x) => x.rule),
		['(b) overwrite', '(a) final value'],
	);
	// only reads close the window: the same flip with no runbook read after it stays the console's (the runbook's
	// request before its write is not a read of the switch: a write right after its read is the window below)
	const bl = (caller: string): LogEntry => entry(caller, 'applicationProtection.ipBlacklist.get', 'GET', BL, undefined);
	const unread = [poll('app'), sw('app', 1), poll('app'), sw('user:N', 0), sw('console', 1), bl('app'), sw('app', 0)];
	assert.deepEqual(
		run(listed(), listed(), unread).map((x) => x.rule),
		['(b) overwrite', '(a) final value'],
	);
	// a block knows its own writes: its add, remove and add again across the runbook's reads stays its own
	const block = [
		bl('app'),
		add('user:P', '198.18.0.1'),
		del('user:P', '198.18.0.1'),
		bl('app'),
		add('user:P', '198.18.0.1'),
	];
	assert.deepEqual(run(listed(), listed('198.18.0.1'), block), []);
	// someone else's read proves nothing about the runbook's view
	const theirs = [
		poll('app'),
		sw('app', 1),
		poll('app'),
		sw('user:N', 0),
		sw('console', 1),
		poll('user:N'),
		bl('app'),
		sw('app', 0),
	];
	assert.deepEqual(
		run(listed(), listed(), theirs).map((x) => x.rule),
		['(b) overwrite', '(a) final value'],
	);
});

test("a write of someone else's inside the runbook write's own read → write window is the API's gap, reported; any earlier is not", () => {
	const AUTH = '/api/specp/policy/appshield/site/20001/domain-port/30001/auth-ip';
	const auth = (caller: string, rps: number): LogEntry =>
		entry(caller, 'applicationProtection.authIp.set', 'POST', AUTH, {
			action: 'ratelimit',
			enable: 1,
			mode: 1,
			action_ratelimit: { duration: 60, ratelimit_rps: rps, threshold_rps: rps * 2 },
		});
	const get = (caller: string): LogEntry => entry(caller, 'applicationProtection.authIp.get', 'GET', AUTH, undefined);
	const start = new Map<string, unknown>([
		[
			'ipAuth.30001',
			{
				action: 'ratelimit',
				enable: 1,
				mode: 1,
				action_ratelimit: { duration: 60, ratelimit_rps: 100, threshold_rps: 200 },
			},
		],
	]);
	const check1 = (log: LogEntry[], windows: string[] = []) =>
		check(
			start,
			start,
			log.flatMap((e) => writesOf(e, actorOf)),
			new Set(),
			windows,
		).map((x) => x.rule);
	// mitigation (its own read, its write), then the revert: its workflow's read, its write's read, the console, its write
	const inWindow = [get('app'), auth('app', 50), get('app'), get('app'), auth('console', 7), auth('app', 100)];
	const windows: string[] = [];
	assert.deepEqual(check1(inWindow, windows), []);
	assert.deepEqual(windows, [
		"ipAuth.30001: console's write at seq " +
			`${inWindow[4].seq} fell between the runbook's read at seq ${inWindow[3].seq} and its write at seq ${inWindow[5].seq}`,
	]);
	// seeds 462 / 477 before the fix: the console's write before the write's own read, which showed it
	const before = [get('app'), auth('app', 50), get('app'), auth('console', 7), get('app'), auth('app', 100)];
	assert.deepEqual(check1(before), ['(b) overwrite', '(a) final value']);
	// a write right after another of the runbook's requests (here a poll of another setting) gets no allowance
	const notOwn = [get('app'), auth('app', 50), get('app'), auth('console', 7), poll('app'), auth('app', 100)];
	assert.deepEqual(check1(notOwn), ['(b) overwrite', '(a) final value']);
	// seed 135: the console sets the runbook's very target inside the mitigation write's window; the write changes
	// nothing, the revert restores what the read saw: the same gap, reported, no violation
	const sameTarget = [get('app'), auth('console', 50), auth('app', 50), get('app'), get('app'), auth('app', 100)];
	const w2: string[] = [];
	assert.deepEqual(check1(sameTarget, w2), []);
	assert.equal(w2.length, 1);
	// outside the window (the console's write before the runbook's read), that revert is a violation
	const sawIt = [auth('console', 50), get('app'), auth('app', 50), get('app'), get('app'), auth('app', 100)];
	assert.deepEqual(check1(sawIt), ['(b) overwrite', '(a) final value']);
});

test('schedules are a function of their seed', () => {
	assert.deepEqual(generate(37), generate(37));
	assert.notDeepEqual(generate(37), generate(38));
	const kinds = new Set(
		Array.from({ length: 200 }, (_, i) => generate(i + 1)).flatMap((s) => s.steps.map((st) => st.act.actor)),
	);
	assert.deepEqual([...kinds].sort(), ['abort', 'block', 'console', 'drift', 'extend', 'kill', 'n8n']);
});

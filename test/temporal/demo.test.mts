/**
 * `npm run demo` end to end (non-interactive): the real script, a real Temporal dev server, the worker process and
 * the simulator. Asserts exit 0, the timeline order and the summary; then Ctrl-C mid-attack stops everything.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { test } from 'node:test';
import { announceStarted, ROOT } from '../../demo/stack.mts';
import '../helpers/started.mts'; // a failing test prints what this file started

function runDemo(args: string[], onLine?: (line: string, child: ReturnType<typeof spawn>) => void) {
	const child = spawn('bash', [`${ROOT}scripts/demo.sh`, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '';
	let err = '';
	let buf = '';
	announceStarted({ what: `demo (scripts/demo.sh ${args.join(' ')})`, pid: child.pid, log: () => `${out}\n${err}` });
	child.stdout!.on('data', (d: Buffer) => {
		out += d;
		buf += d;
		let i: number;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			onLine?.(line, child);
		}
	});
	child.stderr!.on('data', (d: Buffer) => (err += d));
	const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
	return new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
		child.on('close', (code) => {
			clearTimeout(timer);
			resolve({ code, out, err });
		}),
	);
}

const idx = (out: string, re: RegExp) => {
	const m = re.exec(out);
	assert.ok(m, `output lacks ${re}:\n${out}`);
	return m.index;
};

const answers = async (url: string) => {
	try {
		await (await fetch(url, { signal: AbortSignal.timeout(1000) })).arrayBuffer();
		return true;
	} catch {
		return false;
	}
};

test('npm run demo: attack detected → mitigated → over → cooldown → reverted; summary; exit 0', async () => {
	const t = Date.now();
	const r = await runDemo(['--ephemeral', '--attack-seconds', '6', '--cooldown', '2', '--every', '1']);
	assert.equal(r.code, 0, `demo exited ${r.code}\n${r.out}\n${r.err}`);
	const o = r.out;
	assert.match(o, /Temporal Web UI\s+http:\/\/127\.0\.0\.1:\d+/);
	// Timeline order: the runbook's own lines in order, and the attack's end after its start. The simulated end is the
	// demo's own observation (its loop reads the simulator every 300 ms), the cooldown the runbook's: both follow the
	// same event, so their order in the output is a race (CI printed COOLDOWN first), as is the end against the
	// mitigation lines under load (the 6 s attack may end before the last write; the time-to-mitigate bound is below).
	const inOrder = (res: RegExp[], what: string) => {
		const at = res.map((re) => idx(o, re));
		assert.deepEqual(
			[...at].sort((a, b) => a - b),
			at,
			what,
		);
	};
	inOrder(
		[
			/ATTACK\s+UDP Total on site 20001/,
			/DETECTED .*attack-response-20001 started/,
			/MITIGATE detection mode: 0 → 1/,
			/MITIGATE IP blacklist of 30001: blacklisted \d+ range\(s\) .*203\.0\.113\.10-203\.0\.113\.13/,
			/MITIGATED all changes applied/,
			/COOLDOWN 2s/,
			/REVERT\s+detection mode: restored/,
		],
		"the runbook's timeline lines in order",
	);
	inOrder([/ATTACK\s+UDP Total/, /OVER\s+attack stopped/], 'the attack ends after it starts');
	// summary
	const num = (label: string) => Number(new RegExp(`${label}\\s+([\\d.]+) s`).exec(o)?.[1]);
	assert.match(o, /outcome\s+reverted/);
	const detect = num('time to detect');
	const mitigate = num('time to mitigate');
	const revert = num('time to revert');
	assert.ok(detect >= 0 && detect < 10, `time to detect ${detect}`);
	assert.ok(mitigate >= detect && mitigate < 15, `time to mitigate ${mitigate}`);
	assert.ok(revert >= 1 && revert < 15, `time to revert ${revert} (cooldown 2 s)`);
	assert.match(o, /changes\s+6 applied, 6 restored, 0 conflict/);
	assert.match(o, /not blacklisted\s+30001:198\.51\.100\.7 \(protected range\)/);
	assert.match(o, /metrics\s+http:\/\/127\.0\.0\.1:\d+\/metrics/);
	const report = /report\s+(\S+\.html)/.exec(o)?.[1];
	assert.ok(report && readFileSync(report, 'utf8').includes('<svg class="chart wide"'), `the HTML report ${report}`);
	rmSync(report, { force: true });
	assert.doesNotMatch(o + r.err, /demo-[0-9a-f]{24}/, 'the app secret is never printed');
	assert.ok(Date.now() - t < 150_000, 'finishes within ~2 minutes');
});

test('Ctrl-C during the attack stops the worker, the Temporal dev server and the simulator', async () => {
	let http = '';
	let sim = '';
	let workerPid = 0;
	let sent = false;
	const r = await runDemo(['--ephemeral', '--attack-seconds', '60', '--every', '1'], (line, child) => {
		http ||= /Temporal HTTP\s+(\S+)/.exec(line)?.[1] ?? '';
		sim ||= /simulator\s+(http\S+)/.exec(line)?.[1] ?? '';
		workerPid ||= Number(/worker\s+pid (\d+)/.exec(line)?.[1] ?? 0);
		if (!sent && /MITIGATED/.test(line)) {
			sent = true;
			child.kill('SIGINT');
		}
	});
	assert.ok(sent, `never reached MITIGATED:\n${r.out}\n${r.err}`);
	assert.equal(r.code, 130, r.out + r.err);
	assert.match(r.out, /SIGINT: stopping/);
	assert.ok(http && sim);
	assert.equal(await answers(`${http}/api/v1/namespaces/default`), false, 'Temporal dev server stopped');
	assert.equal(await answers(`${sim}/__sim/ids`), false, 'simulator stopped');
	assert.ok(workerPid > 0);
	assert.throws(() => process.kill(workerPid, 0), 'worker process gone');
});

// What a test file started, printed when the file has a failing test (issue 36 item 5): each server and process with
// its addresses, PID and seed, and the last lines of its log, so that a failure can be reproduced from CI output
// alone. The starters (simulator/index.mts, demo/stack.mts, test/temporal/helpers.mts, test/n8n/editor-server.mts,
// test/n8n/n8n-child.mts, test/cluster/helpers.mts) announce what they start on the diagnostics channel
// `secsvc:started` (demo/stack.mts announceStarted; nothing happens where nobody listens: the demo, the benchmarks).
// This module listens; the shared test helpers (test/temporal/helpers.mts, test/n8n/harness.mts,
// test/simulator/helpers.mts) import it, or the file itself does; its hooks are the file's root hooks (or, for the
// files run in one process, each file's suite's: test/helpers/oneProcess.mts).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { after, afterEach } from 'node:test';
import { STARTED_CHANNEL, type StartedThing } from '../../demo/stack.mts';

const LOG_LINES = 25;

/** Registers the hooks of the current file (or suite): what starts from now on is printed after it if a test failed. */
export function reportWhatThisFileStarted(): void {
	const started: StartedThing[] = [];
	const onStarted = (message: unknown) => void started.push(message as StartedThing);
	subscribe(STARTED_CHANNEL, onStarted);
	let failed = 0;
	afterEach((t) => {
		if (!(t as unknown as { passed: boolean }).passed) failed++; // TestContext.passed (Node >= 20.12); not in our @types/node
	});
	// Registered when the file's helpers are imported, before the file's own `after` hooks: what it started still runs.
	after(() => {
		unsubscribe(STARTED_CHANNEL, onStarted);
		if (failed && started.length) process.stderr.write(report(started, failed));
	});
}

// Only in a test run (a file the runner started, or a *.test.mts run directly): a benchmark that imports the test
// helpers (bench/n8n.mts) must not turn into a test run. Files run in one process (test/helpers/oneProcess.mts) get
// these hooks per file from there.
const testRun = process.env.NODE_TEST_CONTEXT || /\.test\.m?ts$/.test(process.argv[1] ?? '');
if (testRun && !process.env.SECSVC_ONE_PROCESS_FILES) reportWhatThisFileStarted();

function report(started: StartedThing[], failures: number): string {
	const seeds = Object.entries(process.env).filter(([k]) => /^SECSVC_.*SEED/.test(k));
	const out = [
		`\n──── ${failures} failing test(s); what this file started (ports, PIDs, seeds, last ${LOG_LINES} log lines) ────`,
		...seeds.map(([k, v]) => `env ${k}=${v}`),
	];
	// things with only a seed (interleave's 200 seededRandom moments) in one line per kind, not one line each
	const isBare = (s: StartedThing) =>
		s.seed !== undefined && !s.pid && !s.log && !Object.keys(s.addresses ?? {}).length;
	const bare = new Map<string, number[]>();
	for (const s of started) if (isBare(s)) bare.set(s.what, [...(bare.get(s.what) ?? []), s.seed as number]);
	for (const [what, list] of bare) out.push(`▸ ${what} · seed${list.length > 1 ? 's' : ''} ${list.join(', ')}`);
	for (const s of started) {
		if (isBare(s)) continue;
		const where = Object.entries(s.addresses ?? {})
			.filter(([, v]) => v !== undefined)
			.map(([k, v]) => `${k} ${v}`);
		const head = [s.what, s.pid ? `pid ${s.pid}` : '', ...where, s.seed !== undefined ? `seed ${s.seed}` : ''];
		out.push(`▸ ${head.filter(Boolean).join(' · ')}`);
		let log = '';
		try {
			log = s.log?.() ?? '';
		} catch (e) {
			log = `(its log could not be read: ${(e as Error).message})`;
		}
		const lines = log.trimEnd().split('\n').filter(Boolean).slice(-LOG_LINES);
		for (const l of lines) out.push(`    | ${l.length > 400 ? `${l.slice(0, 400)}…` : l}`);
	}
	return `${out.join('\n')}\n────\n`;
}

// A node:test reporter for scripts/test.sh: one line per test file, `<seconds>\t<file>\t<ok|FAILED>`, from the
// runner's file-level `test:complete` event (its duration covers the file's whole process: imports, hooks, tests), or
// for files run in one process (test/helpers/oneProcess.mts) from the suite named by the file (its hooks and tests).
// scripts/test.sh writes it beside each lane's log and prints the slowest files per lane at the end (issue 36 item 4).
import { relative } from 'node:path';

export default async function* fileTimes(source) {
	for await (const event of source) {
		const d = event.data;
		const oneProcess = d?.nesting === 0 && d.details?.type === 'suite';
		if (event.type !== 'test:complete' || !d?.file || !(d.name === d.file || oneProcess)) continue;
		if (!/\.test\.m?ts$/.test(d.name)) continue; // a file's own suites; oneProcess.mts itself
		const seconds = ((d.details?.duration_ms ?? 0) / 1000).toFixed(1);
		yield `${seconds}\t${relative(process.cwd(), d.name)}\t${d.details?.passed === false ? 'FAILED' : 'ok'}\n`;
	}
}

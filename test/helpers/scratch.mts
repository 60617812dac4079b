/**
 * A temp folder of this test process, removed when the process exits — passed, failed or thrown — so no run leaves
 * its files in the OS temp dir (a file stopped by the queue's bound with SIGKILL is the one case it cannot cover).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dirs = new Set<string>();

export function scratchDir(prefix: string): string {
	if (dirs.size === 0) process.once('exit', () => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
	const dir = mkdtempSync(join(tmpdir(), prefix));
	dirs.add(dir);
	return dir;
}

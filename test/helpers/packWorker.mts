import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const alive = (pid: number) => {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
};

/**
 * `npm pack` of `root`/worker into `dir`, one pack at a time per checkout; the tarball's path. Its prepack writes
 * worker/dist/ and its postpack removes the workflow bundles from it, so a second pack beside it ships a tarball
 * without them (session 24, n8n/readme beside package/worker-package: "ENOENT … dist/workflows.js" in the sandbox).
 * The lock is a folder holding its owner's PID; a dead owner's lock is taken over.
 */
export function packWorker(root: string, dir: string): string {
	const lock = join(tmpdir(), `secsvc-worker-pack-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
	for (const until = Date.now() + 600_000; ; sleepSync(200)) {
		try {
			mkdirSync(lock);
			writeFileSync(join(lock, 'pid'), String(process.pid));
			break;
		} catch (e) {
			if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
			let owner = 0;
			try {
				owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
			} catch {
				// its owner is between mkdir and writing its PID
			}
			if (owner && !alive(owner)) rmSync(lock, { recursive: true, force: true });
			else if (Date.now() > until) throw new Error(`waited 10 min for another npm pack of worker/ (${lock})`);
		}
	}
	try {
		execFileSync('npm', ['pack', '--pack-destination', dir], {
			cwd: join(root, 'worker'),
			stdio: ['ignore', 'ignore', 'pipe'],
		});
	} finally {
		rmSync(lock, { recursive: true, force: true });
	}
	const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
	if (!tgz) throw new Error(`npm pack of worker/ left no tarball in ${dir}`);
	return join(dir, tgz);
}

// n8n's SQLite database with every migration of the runtime's n8n already run, made once per n8n version in the
// runtime's cache and copied into each fresh user folder. Each test file's first n8n command in a new folder ran
// n8n 2.40.7's ~130 migrations itself: 8.5 s of CPU against 5.3 s for the same command on a migrated database; on a
// saturated machine that was the difference between n8n starting and a 120 s / 180 s bound passing by (test/README.md).
// The copy is the state n8n's own first start leaves (nothing in it depends on the folder: the encryption key comes from
// the environment), so every file still starts its own n8n on its own database.
import { execFileSync } from 'node:child_process';
import {
	copyFileSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	renameSync,
	rmSync,
} from 'node:fs';
import { join } from 'node:path';

/** Copies the migrated database into `userFolder`/.n8n (made on first use with `env`, the folder's n8n settings). */
export function copyMigratedDb(
	rt: { dir: string; node: string; n8n: string },
	env: NodeJS.ProcessEnv,
	userFolder: string,
): void {
	const version = JSON.parse(readFileSync(join(rt.dir, 'node_modules/n8n/package.json'), 'utf8')).version as string;
	const made = join(rt.dir, `migrated-db-${version}`);
	if (!existsSync(join(made, '.n8n', 'database.sqlite'))) {
		const tmp = mkdtempSync(join(rt.dir, 'migrated-db.tmp-'));
		try {
			execFileSync(rt.node, [rt.n8n, 'list:workflow'], {
				env: { ...env, HOME: tmp, N8N_USER_FOLDER: tmp },
				cwd: tmp,
				stdio: ['ignore', 'ignore', 'pipe'],
				timeout: 600_000,
			});
			renameSync(tmp, made); // atomic; another file that made it first wins (ENOTEMPTY)
		} catch (e) {
			if (!existsSync(join(made, '.n8n', 'database.sqlite'))) throw e;
		} finally {
			rmSync(tmp, { recursive: true, force: true });
		}
	}
	const to = join(userFolder, '.n8n');
	mkdirSync(to, { recursive: true });
	// the database and its write-ahead log (the migrations n8n has not checkpointed); the -shm index is rebuilt
	for (const f of readdirSync(join(made, '.n8n')))
		if (f === 'database.sqlite' || f === 'database.sqlite-wal') copyFileSync(join(made, '.n8n', f), join(to, f));
}

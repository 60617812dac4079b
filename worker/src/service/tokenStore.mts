// A file token store: a rotated refresh token is written (atomically, mode 0600) before it is used.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StoredToken, TokenStore } from '../../../api/tokens.ts';

export class FileTokenStore implements TokenStore {
	private chain: Promise<unknown> = Promise.resolve();
	constructor(private readonly file: string) {}

	private async readAll(): Promise<Record<string, StoredToken>> {
		try {
			return JSON.parse(await readFile(this.file, 'utf8')) as Record<string, StoredToken>;
		} catch (e) {
			if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
			throw new Error(`token store ${this.file} is unreadable: ${(e as Error).message}`);
		}
	}

	async get(key: string) {
		return (await this.readAll())[key];
	}

	set(key: string, token: StoredToken): Promise<void> {
		const next = this.chain.then(async () => {
			const all = await this.readAll();
			all[key] = token;
			await mkdir(dirname(this.file), { recursive: true });
			const tmp = `${this.file}.${process.pid}.tmp`;
			await writeFile(tmp, JSON.stringify(all), { mode: 0o600 });
			await rename(tmp, this.file);
		});
		this.chain = next.catch(() => {});
		return next;
	}
}

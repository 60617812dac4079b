/** In-process async mutex keyed by string: calls with the same key run one at a time, in arrival order. */
export class KeyedMutex {
	private tails = new Map<string, Promise<void>>();

	async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
		const prev = this.tails.get(key) ?? Promise.resolve();
		let release!: () => void;
		const mine = new Promise<void>((r) => (release = r));
		const tail = prev.then(() => mine);
		this.tails.set(key, tail);
		await prev;
		try {
			return await fn();
		} finally {
			release();
			if (this.tails.get(key) === tail) this.tails.delete(key);
		}
	}

	get busyKeys(): number {
		return this.tails.size;
	}
}

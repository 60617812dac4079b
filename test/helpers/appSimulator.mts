/** A simulator (seed 42) and an app-token client of it, started before a file's tests and closed after them. */
import { after, before } from 'node:test';
import { createClient } from '../../api/client.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';

export function appSimulator(app: { appId: string; secret: string }) {
	const transport = createUndiciTransport();
	const box = {} as { sim: Awaited<ReturnType<typeof startSimulator>>; client: () => ReturnType<typeof createClient> };
	before(async () => {
		box.sim = await startSimulator({ ...app, seed: 42 });
	});
	after(async () => {
		await box.sim.close();
		await transport.close();
	});
	box.client = () =>
		createClient({ baseUrl: box.sim.url, transport, credentials: { ...app, tokenKind: 'app' }, retries: 0 });
	return box;
}

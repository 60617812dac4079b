/**
 * What the tenants tests share: installing customers as the entrance does, reading a site's settings with a
 * customer's own user token (the simulator in strict tenancy refuses the app token on a customer's sites), and the
 * watch-only fleet template.
 */
import type { Client } from '@temporalio/client';
import { MemoryTokenStore } from '../../api/tokens.ts';
import { createClient } from '../../api/client.ts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { connectForCode, exchangeCode, installTenant } from '../../workflows/tenant/client.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { APP_ID, liveSettings, SECRET, type Ids } from '../temporal/helpers.mts';

export const REDIRECT = 'https://install.app.example.com/installed';

/** A fleet template that only watches (no writes): the load the tenants tests put on a customer's token and budget. */
export const WATCH_ONLY_TEMPLATE = {
	detection: { rapidMode: true, thresholds: [] },
	blacklist: { enabled: false },
	cooldownSeconds: 3600,
	pollSeconds: 5,
	maxDurationSeconds: 7200,
};

type AppClient = ReturnType<typeof createApiClient>;

/** Installs every customer (connect, exchange, Update-with-start); returns when each one's first token was issued. */
export async function installAll(
	app: AppClient,
	client: Client,
	queue: string,
	tenants: { customerId: string; sites: Pick<Ids, 'site_id'>[] }[],
): Promise<Map<string, number>> {
	const installedAt = new Map<string, number>();
	for (const c of tenants) {
		const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c.customerId });
		const token = await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code);
		installedAt.set(c.customerId, token.issuedAt);
		await installTenant(
			client,
			queue,
			{ customerId: c.customerId, kind: 'user', sites: c.sites.map((s) => s.site_id) },
			{ ...token, connect: { redirectUri: REDIRECT } },
		);
	}
	return installedAt;
}

/** A site's live settings, read with a user token of the test's own for the site's customer. */
export async function settingsOf(sim: RunningSimulator, ids: Ids) {
	const r = await readerFor(sim, ids.customer_id);
	try {
		return await liveSettings(r, ids);
	} finally {
		await r.close();
	}
}

/** An API client with a fresh user token of this customer (never the workers' tokens), no retries. */
export async function readerFor(sim: RunningSimulator, customerId: string) {
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId });
	const t = await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code);
	await app.close();
	const store = new MemoryTokenStore();
	await store.set('reader', { accessToken: t.accessToken, expiresAt: Date.now() + 25_000 });
	const transport = createUndiciTransport({ connections: 2 });
	const c = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'user' },
		tokenStore: store,
		tokenStoreKey: 'reader',
		retries: 0,
		expirySkewSeconds: 0,
	});
	return Object.assign(c, { close: () => transport.close() });
}

/**
 * What the tenants tests share: installing customers as the entrance does, reading a site's settings with a
 * customer's own user token (the simulator in strict tenancy refuses the app token on a customer's sites), and the
 * watch-only fleet template.
 */
import type { Client } from '@temporalio/client';
import { RENEW_ACTIVITY, tenantWorkflowId } from '../../workflows/tenant/shared.mts';
import { MemoryTokenStore } from '../../api/tokens.ts';
import { createClient } from '../../api/client.ts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { connectForCode, exchangeCode, installTenant } from '../../workflows/tenant/client.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { APP_ID, liveSettings, SECRET, waitFor, type Ids } from '../temporal/helpers.mts';

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

/**
 * How late the window's refresh is answered: past the test workers' 4 s HTTP timeout (SECSVC_TIMEOUT_MS), so that the
 * kill has time on a loaded machine (a 3 s answer was missed 30 times at load 42: the kill came too late). A worker
 * that gives up first (a refresh let through, or the kill late) loses the answer as well: the same window, the same
 * re-install.
 */
const LATE_MS = 10_000;

/**
 * A SIGKILL placed in the refresh's one window (docs/worker/tenants.md "Durable before use; the one window"): the
 * service answers the next refresh late (fault `lateAnswer`: the refresh token is rotated already); the simulator
 * names the customer whose refresh token that request rotated (its log's `caller`). When it is one of `targets`, the
 * worker running that tenant's renewal (its pending activity's worker identity, `<pid>@host`) is killed before it
 * reads the answer. A refresh of another tenant is let through (answered late) and the next one tried. (Telling the
 * late request's tenant from pending activities alone failed: 2–10 target renewals were in flight at once, chaos4.)
 */
export async function killInRefreshWindow(
	sim: RunningSimulator,
	client: Client,
	targets: string[],
	pids: () => (number | undefined)[],
	kill: (worker: number) => Promise<void>,
): Promise<{ customerId: string; worker: number; tries: number }> {
	const op = 'authorization.refreshToken';
	const missed: string[] = [];
	for (let tries = 1; tries <= 30; tries++) {
		const since = Math.max(0, ...sim.sim.requests({ op }).map((r) => r.seq));
		sim.sim.addFault({ op, kind: 'lateAnswer', delayMs: LATE_MS });
		const late = () => sim.sim.requests({ op, since }).find((r) => r.fault === 'lateAnswer' && r.code !== null);
		await waitFor('a refresh answered late', async () => late() !== undefined, 120_000, 20);
		const held = late();
		if (held?.code !== 0) continue; // refused (a retry of a lost answer): nothing rotated
		const customerId = held.caller?.replace(/^user:/, '') ?? '';
		if (!targets.includes(customerId)) {
			missed.push(`${customerId || '?'} not a target`);
			continue;
		}
		const d = await client.workflow.getHandle(tenantWorkflowId(customerId)).describe();
		const a = d.raw.pendingActivities?.find((p) => p.activityType?.name === RENEW_ACTIVITY);
		const worker = pids().indexOf(Number(/^(\d+)@/.exec(a?.lastWorkerIdentity ?? '')?.[1]));
		// the kill must come before the worker can read the answer (a slow machine may have let it leave already)
		const leftIn = held.time + LATE_MS - sim.sim.nowMs();
		if (worker >= 0 && leftIn > 300) {
			await kill(worker);
			return { customerId, worker, tries };
		}
		missed.push(`${customerId}: worker ${a?.lastWorkerIdentity ?? 'none'}, ${leftIn} ms before the answer`);
	}
	throw new Error(`no refresh of a target tenant caught in 30 tries: ${missed.join('; ')}`);
}

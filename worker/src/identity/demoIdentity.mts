/**
 * Proven approvals for a local stack (the demo, `secsvc sandbox`): a local OpenID Connect provider
 * (localProvider.mts) with demo people, the worker's identity settings for it, and a payload key so an ID token
 * travels sealed. `start` → `{ provider, workerEnv, clientEnv }`; `stop` closes the provider. The sandbox keeps its
 * signing key and payload key in its data folder (`dir`): tokens and sealed history stay readable across restarts.
 *
 * workerEnv: what every worker process gets (issuer, audiences, approver group, payload key).
 * clientEnv: what `secsvc approve SITE --login` needs in the operator's shell (issuer, client id, payload key);
 * the demo writes it to a 0600 file and prints only the file's path.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalProvider, type LocalProvider, type Person } from './localProvider.mts';

/** The demo's people: two on-call approvers and one outsider (refused: not in soc-oncall). */
export const DEMO_PEOPLE: Record<string, Person> = {
	'oncall-alice': { email: 'oncall-alice@example.com', groups: ['soc-oncall'] },
	bob: { email: 'bob@example.com', groups: ['soc-oncall'] },
	mallory: { email: 'mallory@example.com', groups: ['contractors'] },
};
export const DEMO_APPROVER_GROUP = 'soc-oncall';
/** The n8n login's client (its ID tokens are accepted next to the CLI's). */
export const N8N_CLIENT = 'secsvc-n8n';

export interface DemoIdentity {
	provider: LocalProvider;
	workerEnv: Record<string, string>;
	clientEnv: Record<string, string>;
	stop(): Promise<void>;
}

/** The payload key kept in `dir` (created once, 0600), or a fresh one per start without `dir`. */
function payloadKey(dir?: string): string {
	const file = dir && join(dir, 'payload-key');
	if (file && existsSync(file)) return readFileSync(file, 'utf8').trim();
	const key = `demo:${randomBytes(32).toString('base64')}`;
	if (file) writeFileSync(file, `${key}\n`, { mode: 0o600 });
	return key;
}

export async function startDemoIdentity(o: { port?: number; dir?: string } = {}): Promise<DemoIdentity> {
	const provider = await startLocalProvider({
		people: DEMO_PEOPLE,
		clients: [N8N_CLIENT],
		port: o.port ?? 0,
		...(o.dir ? { keyFile: join(o.dir, 'identity-key.json') } : {}),
	});
	const payloadKeys = payloadKey(o.dir);
	const shared = { SECSVC_OIDC_ISSUER: provider.issuer, SECSVC_PAYLOAD_KEYS: payloadKeys };
	return {
		provider,
		workerEnv: {
			...shared,
			SECSVC_OIDC_AUDIENCE: `secsvc-cli,${N8N_CLIENT}`,
			SECSVC_APPROVER_GROUPS: DEMO_APPROVER_GROUP,
		},
		clientEnv: { ...shared, SECSVC_OIDC_CLIENT_ID: 'secsvc-cli', SECSVC_OIDC_AUDIENCE: 'secsvc-cli' },
		stop: () => provider.close(),
	};
}

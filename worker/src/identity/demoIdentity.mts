/**
 * Proven approvals for a local stack (the demo; the sandbox can call the same): a local OpenID Connect provider
 * (localProvider.mts) with demo people, the worker's identity settings for it, and a payload key so an ID token
 * travels sealed. `start` → `{ provider, workerEnv, clientEnv }`; `stop` closes the provider.
 *
 * workerEnv: what every worker process gets (issuer, audiences, approver group, payload key).
 * clientEnv: what `secsvc approve SITE --login` needs in the operator's shell (issuer, client id, payload key);
 * the demo writes it to a 0600 file and prints only the file's path.
 */
import { randomBytes } from 'node:crypto';
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

export async function startDemoIdentity(o: { port?: number } = {}): Promise<DemoIdentity> {
	const provider = await startLocalProvider({ people: DEMO_PEOPLE, clients: [N8N_CLIENT], port: o.port ?? 0 });
	const payloadKeys = `demo:${randomBytes(32).toString('base64')}`;
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

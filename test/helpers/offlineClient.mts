import { createClient, type Client } from '../../api/client.ts';

/**
 * A client whose transport answers every request with success and counts it: for tests that prove bad input never
 * leaves (`sent()` stays 0) without a server.
 */
export function offlineClient(secret: string): { client: Client; sent: () => number } {
	let sent = 0;
	const client = createClient({
		baseUrl: 'http://127.0.0.1:9',
		transport: async () => {
			sent++;
			return { status: 200, headers: {}, body: '{"code":0,"msg":"ok"}' };
		},
		credentials: { appId: 'a', secret, tokenKind: 'app' },
	});
	return { client, sent: () => sent };
}

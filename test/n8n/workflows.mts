// Workflow documents for the n8n tests (also the shape of examples/n8n/*.json).
export const NODE_TYPE = 'CUSTOM.securityService';
export const CREDENTIAL = { id: 'secsvcCred001', name: 'Security Service (simulator)' };
export const USER_CREDENTIAL = { id: 'secsvcCred002', name: 'Security Service user token (simulator)' };

let n = 0;
export function ssNode(
	name: string,
	parameters: Record<string, unknown>,
	opts: { continueOnFail?: boolean; credential?: typeof CREDENTIAL } = {},
) {
	n++;
	return {
		id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
		name,
		type: NODE_TYPE,
		typeVersion: 1,
		position: [200 + n * 200, 300],
		parameters,
		credentials: { securityServiceApi: opts.credential ?? CREDENTIAL },
		...(opts.continueOnFail ? { onError: 'continueRegularOutput' } : {}),
	};
}

export function httpNode(name: string, url: string) {
	n++;
	return {
		id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
		name,
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		position: [200 + n * 200, 300],
		parameters: { method: 'POST', url, options: {} },
	};
}

/** n8n's Manual Trigger node. */
export function manualTrigger(id: string, name = 'Start') {
	return { id, name, type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 300], parameters: {} };
}

/** Connections of a linear workflow: nodes[0] → nodes[1] → … on the main output. */
export function linearConnections(nodes: ReadonlyArray<{ name: string }>): Record<string, unknown> {
	const connections: Record<string, unknown> = {};
	for (let i = 0; i < nodes.length - 1; i++)
		connections[nodes[i].name] = { main: [[{ node: nodes[i + 1].name, type: 'main', index: 0 }]] };
	return connections;
}

/** A linear workflow: Manual Trigger → nodes[0] → nodes[1] → … */
export function chain(id: string, name: string, nodes: any[]) {
	const all = [manualTrigger(`10000000-0000-4000-8000-${id.padStart(12, '0').slice(-12)}`), ...nodes];
	return {
		id,
		name,
		active: false,
		nodes: all,
		connections: linearConnections(all),
		settings: { executionOrder: 'v1' },
		pinData: {},
	};
}

// Shared set-up of the in-process n8n runners (inprocess-runner.mjs, trigger-runner.mjs), run with the cached
// Node 24 of the n8n runtime: stdout reserved for MARK-prefixed answers, n8n's packages resolved the way the n8n
// CLI does, this repo's dist/ served the runtime's n8n-workflow, n8n's Cipher with the instance key, a node-types
// registry, our credential type, an encrypted in-memory credentials table and n8n's own CLI CredentialsHelper.
// Environment: N8N_RUNTIME (folder holding node_modules/n8n), SECSVC_DIST (this repo's dist/),
// N8N_USER_FOLDER (a temp folder), N8N_ENCRYPTION_KEY.
import { createRequire } from 'node:module';
import Module from 'node:module';
import { join, resolve } from 'node:path';

/**
 * @param {{ mark: string, runner: string, nodes: (ctx: { n8nRequire: NodeRequire, distRoot: string, core: any }) => Record<string, object> }} o
 */
export function bootN8nRuntime(o) {
	// Everything n8n prints (its logger, deprecation notices) goes to stderr so stdout carries only answers.
	const realStdoutWrite = process.stdout.write.bind(process.stdout);
	const answer = (obj) => realStdoutWrite(`${o.mark}${JSON.stringify(obj)}\n`);
	console.log = (...a) => console.error(...a);
	console.info = (...a) => console.error(...a);
	console.debug = (...a) => console.error(...a);
	process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

	const runtime = process.env.N8N_RUNTIME;
	const dist = process.env.SECSVC_DIST;
	if (!runtime || !dist) throw new Error('N8N_RUNTIME and SECSVC_DIST must be set');

	// Resolve n8n's packages the way the n8n CLI does: from node_modules/n8n.
	const n8nRequire = createRequire(join(runtime, 'node_modules/n8n/package.json'));
	n8nRequire('reflect-metadata');

	// Our dist/ requires 'n8n-workflow' (a peer dependency). Serve it the n8n runtime's copy, so the node and the
	// engine share one n8n-workflow (as n8n's own node tests do); zod still comes from this repo.
	const workflowPath = n8nRequire.resolve('n8n-workflow');
	const distRoot = resolve(dist);
	const origResolve = Module._resolveFilename;
	Module._resolveFilename = function (request, parent, ...rest) {
		if (request === 'n8n-workflow' && parent?.filename?.startsWith(distRoot)) return workflowPath;
		return origResolve.call(this, request, parent, ...rest);
	};

	const { Container } = n8nRequire('@n8n/di');
	const wf = n8nRequire('n8n-workflow');
	const core = n8nRequire('n8n-core');
	const { CredentialsHelper } = n8nRequire('n8n/dist/credentials-helper.js');
	const { SecurityServiceApi } = n8nRequire(join(distRoot, 'credentials/SecurityServiceApi.credentials.js'));
	const { Cipher, EncryptionKeyProxy, Credentials, InstanceSettings } = core;

	// Encryption: n8n's Cipher with the instance key (n8n's default when key rotation is off: the "instance-key"
	// no-prefix descriptor its KeyManagerService returns). Credentials are stored encrypted, as in n8n's database.
	const cipher = Container.get(Cipher);
	const instanceKeyInfo = {
		id: 'instance-key',
		value: cipher.encryptDEKWithInstanceKey(Container.get(InstanceSettings).encryptionKey),
		algorithm: 'aes-256-cbc',
		format: 'no-prefix',
	};
	Container.get(EncryptionKeyProxy).setProvider({
		getActiveKey: async () => instanceKeyInfo,
		getKeyById: async (id) => (id === instanceKeyInfo.id ? instanceKeyInfo : null),
		getLegacyKey: async () => instanceKeyInfo,
	});

	// Node types, under the names a workflow uses.
	const NODE_TYPES = o.nodes({ n8nRequire, distRoot, core });
	const nodeTypes = {
		getByName: (type) => {
			const t = NODE_TYPES[type];
			if (!t) throw new Error(`unknown node type ${type}`);
			return t;
		},
		getByNameAndVersion: (type, version) => wf.NodeHelpers.getVersionedNodeType(nodeTypes.getByName(type), version),
		getKnownTypes: () => ({}),
	};

	// Credential types: ours.
	const credentialType = new SecurityServiceApi();
	const credentialTypes = {
		getByName: (name) => {
			if (name !== credentialType.name) throw new Error(`unknown credential type ${name}`);
			return credentialType;
		},
		recognizes: (name) => name === credentialType.name,
		getParentTypes: () => [],
		getSupportedNodes: () => [],
	};

	// The credentials "database": rows of {id, name, type, data (encrypted)}, like n8n's CredentialsEntity.
	const rows = new Map();
	/** Credential ids n8n wrote back (preAuthentication results), for the runner to report. */
	const updates = [];
	const credentialsRepository = {
		async findOneByOrFail({ id, type }) {
			const row = rows.get(id);
			if (!row || row.type !== type) throw new Error(`credential ${id} (${type}) not found`);
			return { ...row, usageScope: 'project', isResolvable: false, resolverId: null };
		},
		async update({ id }, data) {
			const row = rows.get(id);
			rows.set(id, { ...row, data: data.data });
			updates.push(id);
		},
	};

	// n8n's own CLI CredentialsHelper (generic `authenticate` with expression resolution, `preAuthentication`
	// that runs when the expirable property is empty or the credential expired and persists what it returns),
	// with its collaborators reduced to what an execution of a plain credential touches.
	if (CredentialsHelper.length !== 9) {
		throw new Error(`n8n's CredentialsHelper takes ${CredentialsHelper.length} collaborators (9 expected for n8n 2.40.x): update test/n8n/n8n-runtime.mjs (${o.runner})`);
	}
	const credentialsHelper = new CredentialsHelper(
		credentialTypes,
		{ applyOverwrite: (_t, d) => d, usesManagedAuth: () => false, getOverwrites: () => ({}) },
		credentialsRepository,
		{ resolveIfNeeded: async (_c, data) => ({ data, isDynamic: false }), getEffectiveResolverId: () => undefined },
		{ findAllAccessibleProviderKeysByCredentialId: async () => [] },
		{ isExternalSecretsLicensed: () => false },
		{ externalSecretsForProjects: false },
		{},
		{ enforceCredentialDecrypt: async () => {} },
	);

	async function setCredential(credId, name, data) {
		const c = new Credentials({ id: credId, name }, credentialType.name);
		await c.setData(data);
		rows.set(credId, { ...c.getDataToSave(), id: credId });
	}
	async function getCredential(credId) {
		const row = rows.get(credId);
		if (!row) return null;
		return await new Credentials({ id: row.id, name: row.name }, row.type, row.data).getData();
	}

	return { answer, n8nRequire, distRoot, Container, wf, core, nodeTypes, credentialsHelper, setCredential, getCredential, updates };
}

/** An n8n error as plain JSON for the driver (the first lines of its stack only). */
export function serializeError(e) {
	if (!e) return undefined;
	return {
		name: e.name,
		message: e.message,
		description: e.description ?? undefined,
		context: e.context ?? undefined,
		httpCode: e.httpCode ?? undefined,
		nodeName: e.node?.name,
		cause: e.cause?.message,
		stack: (e.cause?.stack ?? e.stack)?.split('\n').slice(0, 8).join('\n'),
	};
}

/**
 * The IWorkflowExecuteAdditionalData of one execution, with the URLs n8n's WorkflowExecuteAdditionalData.getBase
 * derives from the instance URL (never called here); sub-workflows and task runners are not used.
 */
export function additionalData({ credentialsHelper, hooks, executionId, workflowId }) {
	const base = 'http://127.0.0.1:5678';
	return {
		credentialsHelper,
		hooks,
		executionId,
		currentNodeExecutionIndex: 0,
		restApiUrl: `${base}/rest`,
		instanceBaseUrl: `${base}/`,
		formBaseUrl: `${base}/form`,
		formWaitingBaseUrl: `${base}/form-waiting`,
		formTestBaseUrl: `${base}/form-test`,
		webhookBaseUrl: `${base}/webhook`,
		webhookWaitingBaseUrl: `${base}/webhook-waiting`,
		webhookTestBaseUrl: `${base}/webhook-test`,
		mcpBaseUrl: `${base}/mcp`,
		mcpTestBaseUrl: `${base}/mcp-test`,
		variables: {},
		workflowId,
		userId: 'in-process-user',
		executeWorkflow: async () => {
			throw new Error('sub-workflows are not used here');
		},
		getRunExecutionData: async () => undefined,
		getRuntimeCredential: async () => undefined,
		logAiEvent: () => {},
		startRunnerTask: async () => {
			throw new Error('task runners are not used here');
		},
	};
}

/**
 * The runner's command loop: announces readiness with `versions`, then answers one JSON command per stdin line
 * (`{id, cmd, ...}` → `{id, ok, result}` or `{id, ok: false, error}`) with `commands[cmd](msg)`; 'exit' runs
 * `onExit` and ends the process.
 */
export async function serveCommands(answer, versions, commands, onExit = async () => {}) {
	const { createInterface } = await import('node:readline');
	const rl = createInterface({ input: process.stdin });
	answer({ ready: true, versions });
	for await (const line of rl) {
		if (!line.trim()) continue;
		let msg;
		try {
			msg = JSON.parse(line);
			if (msg.cmd === 'exit') {
				await onExit();
				answer({ id: msg.id, ok: true });
				break;
			}
			const command = commands[msg.cmd];
			if (!command) throw new Error(`unknown command ${msg.cmd}`);
			const result = await command(msg);
			answer({ id: msg.id, ok: true, result: result ?? null });
		} catch (e) {
			answer({ id: msg?.id, ok: false, error: { message: e?.message ?? String(e), stack: e?.stack } });
		}
	}
	process.exit(0);
}

// In-process n8n runner (run with the cached Node 24 of the n8n runtime, not with the project's Node 20).
//
// Loads n8n's own execution code from the cached n8n install (n8n-core WorkflowExecute, n8n-workflow Workflow,
// n8n's CLI CredentialsHelper, n8n-nodes-base ManualTrigger) plus this repo's built node and credential from
// dist/, and executes workflows sent to it. Protocol: one JSON command per line on stdin, one JSON answer per
// line on stdout prefixed with MARK (anything else n8n prints goes to stderr). Commands:
//   {id, cmd: 'setCredential', credId, name, data}       store a credential (encrypted, like n8n's database)
//   {id, cmd: 'getCredential', credId}                   the stored credential, decrypted
//   {id, cmd: 'run', workflow: {nodes, connections, pinData?}}  run it (manual mode) → {status, error, runData, order}
//   {id, cmd: 'exit'}
// Environment: N8N_RUNTIME (folder holding node_modules/n8n), SECSVC_DIST (this repo's dist/),
// N8N_USER_FOLDER (a temp folder), N8N_ENCRYPTION_KEY.
import { createRequire } from 'node:module';
import Module from 'node:module';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const MARK = '@@secsvc-inprocess@@ ';

// Everything n8n prints (its logger, deprecation notices) goes to stderr so stdout carries only answers.
const realStdoutWrite = process.stdout.write.bind(process.stdout);
const answer = (obj) => realStdoutWrite(`${MARK}${JSON.stringify(obj)}\n`);
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
const { ManualTrigger } = n8nRequire('n8n-nodes-base/dist/nodes/ManualTrigger/ManualTrigger.node.js');
const { SecurityService } = n8nRequire(join(distRoot, 'nodes/SecurityService/SecurityService.node.js'));
const { SecurityServiceApi } = n8nRequire(join(distRoot, 'credentials/SecurityServiceApi.credentials.js'));

const { Workflow, NodeHelpers } = wf;
const { createDeferredPromise } = n8nRequire('@n8n/utils/promise/deferred-promise');
const { WorkflowExecute, ExecutionLifecycleHooks, EncryptionKeyProxy, Cipher, Credentials } = core;

// Encryption: n8n's Cipher with the instance key (n8n's default when key rotation is off: the "instance-key"
// no-prefix descriptor its KeyManagerService returns). Credentials are stored encrypted, as in n8n's database.
const cipher = Container.get(Cipher);
const instanceKeyInfo = {
	id: 'instance-key',
	value: cipher.encryptDEKWithInstanceKey(Container.get(core.InstanceSettings).encryptionKey),
	algorithm: 'aes-256-cbc',
	format: 'no-prefix',
};
Container.get(EncryptionKeyProxy).setProvider({
	getActiveKey: async () => instanceKeyInfo,
	getKeyById: async (id) => (id === instanceKeyInfo.id ? instanceKeyInfo : null),
	getLegacyKey: async () => instanceKeyInfo,
});

// Node types: n8n's ManualTrigger and our node, under the names a workflow uses.
const NODE_TYPES = {
	'n8n-nodes-base.manualTrigger': new ManualTrigger(),
	'CUSTOM.securityService': new SecurityService(),
};
const nodeTypes = {
	getByName: (type) => {
		const t = NODE_TYPES[type];
		if (!t) throw new Error(`unknown node type ${type}`);
		return t;
	},
	getByNameAndVersion: (type, version) => NodeHelpers.getVersionedNodeType(nodeTypes.getByName(type), version),
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
/** Credential ids n8n wrote back since the last run answer (preAuthentication results). */
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
// with its collaborators reduced to what a manual execution of a plain credential touches.
if (CredentialsHelper.length !== 9) {
	throw new Error(`n8n's CredentialsHelper takes ${CredentialsHelper.length} collaborators (9 expected for n8n 2.40.x): update inprocess-runner.mjs`);
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

let executions = 0;

function serializeError(e) {
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

async function run(workflowDoc) {
	const executionId = String(++executions);
	const workflow = new Workflow({
		id: workflowDoc.id ?? `wf-${executionId}`,
		name: workflowDoc.name ?? 'in-process',
		nodes: workflowDoc.nodes,
		connections: workflowDoc.connections,
		active: false,
		nodeTypes,
		settings: { executionOrder: 'v1', ...(workflowDoc.settings ?? {}) },
		staticData: {},
	});
	const hooks = new ExecutionLifecycleHooks('manual', executionId, { ...workflowDoc, active: false, settings: {} });
	const order = [];
	hooks.addHandler('nodeExecuteAfter', (nodeName) => order.push(nodeName));
	const done = createDeferredPromise();
	hooks.addHandler('workflowExecuteAfter', (fullRunData) => done.resolve(fullRunData));

	const additionalData = {
		credentialsHelper,
		hooks,
		executionId,
		currentNodeExecutionIndex: 0,
		restApiUrl: 'http://127.0.0.1:5678/rest',
		instanceBaseUrl: 'http://127.0.0.1:5678/',
		// The URLs n8n's WorkflowExecuteAdditionalData.getBase derives from the instance URL (never called here).
		formBaseUrl: 'http://127.0.0.1:5678/form',
		formWaitingBaseUrl: 'http://127.0.0.1:5678/form-waiting',
		formTestBaseUrl: 'http://127.0.0.1:5678/form-test',
		webhookBaseUrl: 'http://127.0.0.1:5678/webhook',
		webhookWaitingBaseUrl: 'http://127.0.0.1:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1:5678/webhook-test',
		mcpBaseUrl: 'http://127.0.0.1:5678/mcp',
		mcpTestBaseUrl: 'http://127.0.0.1:5678/mcp-test',
		variables: {},
		workflowId: workflow.id,
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

	// A full manual run, as n8n's ManualExecutionService starts one: WorkflowExecute.run() from the trigger,
	// with the workflow's pinned data (if any) standing in for node outputs.
	const t0 = performance.now();
	const execute = new WorkflowExecute(additionalData, 'manual');
	await execute.run({ workflow, startNode: workflow.getStartNode(), pinData: workflowDoc.pinData });
	const result = await done.promise;
	const ms = Math.round(performance.now() - t0);

	const runData = {};
	for (const [name, tasks] of Object.entries(result.data.resultData.runData ?? {})) {
		runData[name] = tasks.map((t) => ({
			executionStatus: t.executionStatus,
			error: serializeError(t.error),
			items: (t.data?.main?.[0] ?? []).map((i) => i.json),
			pairedItems: (t.data?.main?.[0] ?? []).map((i) => i.pairedItem),
		}));
	}
	return {
		status: result.status,
		finished: result.finished,
		error: serializeError(result.data.resultData.error),
		lastNodeExecuted: result.data.resultData.lastNodeExecuted,
		runData,
		order,
		ms,
		credentialUpdates: updates.splice(0),
	};
}

const rl = createInterface({ input: process.stdin });
answer({ ready: true, versions: { n8nCore: n8nRequire('n8n-core/package.json').version, n8nWorkflow: n8nRequire('n8n-workflow/package.json').version, n8n: n8nRequire('n8n/package.json').version, node: process.version } });
for await (const line of rl) {
	if (!line.trim()) continue;
	let msg;
	try {
		msg = JSON.parse(line);
		if (msg.cmd === 'exit') {
			answer({ id: msg.id, ok: true });
			break;
		}
		let result;
		if (msg.cmd === 'setCredential') result = await setCredential(msg.credId, msg.name, msg.data);
		else if (msg.cmd === 'getCredential') result = await getCredential(msg.credId);
		else if (msg.cmd === 'run') result = await run(msg.workflow);
		else throw new Error(`unknown command ${msg.cmd}`);
		answer({ id: msg.id, ok: true, result: result ?? null });
	} catch (e) {
		answer({ id: msg?.id, ok: false, error: { message: e?.message ?? String(e), stack: e?.stack } });
	}
}
process.exit(0);

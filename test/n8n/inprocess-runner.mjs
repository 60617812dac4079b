// In-process n8n runner (run with the cached Node 24 of the n8n runtime, not with the project's Node 20).
//
// Loads n8n's own execution code from the cached n8n install (n8n-core WorkflowExecute, n8n-workflow Workflow,
// n8n's CLI CredentialsHelper, n8n-nodes-base ManualTrigger) plus this repo's built node and credential from
// dist/, and executes workflows sent to it. Protocol: one JSON command per line on stdin, one JSON answer per
// line on stdout prefixed with MARK (anything else n8n prints goes to stderr). Commands:
//   {id, cmd: 'setCredential', credId, name, data}       store a credential (encrypted, like n8n's database)
//   {id, cmd: 'getCredential', credId}                   the stored credential, decrypted
//   {id, cmd: 'run', workflow: {nodes, connections, pinData?}}  run it (manual mode) → {status, error, runData, order}
//   {id, cmd: 'testCredential', data, credType?}          the credential's Test button: the test function the node
//                                                        names in `testedBy` (securityServiceApi unless credType
//                                                        says temporalApi), run in n8n's CredentialTestContext
//   {id, cmd: 'exit'}
// Environment: N8N_RUNTIME (folder holding node_modules/n8n), SECSVC_DIST (this repo's dist/),
// N8N_USER_FOLDER (a temp folder), N8N_ENCRYPTION_KEY.
import { join } from 'node:path';
import { additionalData, bootN8nRuntime, serializeError, serveCommands } from './n8n-runtime.mjs';

export const MARK = '@@secsvc-inprocess@@ ';

// n8n's ManualTrigger and our node, under the names a workflow uses; credentials, encryption and n8n's
// CredentialsHelper as set up by n8n-runtime.mjs.
const { answer, n8nRequire, wf, core, nodeTypes, credentialsHelper, setCredential, getCredential, updates } = bootN8nRuntime({
	mark: MARK,
	runner: 'inprocess-runner.mjs',
	nodes: ({ n8nRequire: req, distRoot }) => {
		const { ManualTrigger } = req('n8n-nodes-base/dist/nodes/ManualTrigger/ManualTrigger.node.js');
		const { SecurityService } = req(join(distRoot, 'nodes/SecurityService/SecurityService.node.js'));
		const types = { 'n8n-nodes-base.manualTrigger': new ManualTrigger(), 'CUSTOM.securityService': new SecurityService() };
		// The node as an AI tool, loaded only when a workflow names it: the Tool variant n8n derives for a
		// `usableAsTool` node (n8n's NodeTypes: a clone of the node whose description n8n's convertNodeToAiTool
		// rewrites; same execute), and n8n's Tool Executor, which runs a tool with given arguments the way the
		// editor's "Execute step" on a tool does (no model involved).
		Object.defineProperty(types, 'CUSTOM.securityServiceTool', {
			enumerable: true,
			configurable: true,
			get: () => {
				const { convertNodeToAiTool } = req('n8n/dist/tool-generation/ai-tools.js');
				const base = new SecurityService();
				const clonedDescription = Object.create(base.description, { properties: { value: Object.create(base.description.properties), writable: false } });
				const tool = convertNodeToAiTool(Object.create(base, { description: { value: clonedDescription } }));
				Object.defineProperty(types, 'CUSTOM.securityServiceTool', { value: tool, enumerable: true });
				return tool;
			},
		});
		Object.defineProperty(types, '@n8n/n8n-nodes-langchain.toolExecutor', {
			enumerable: true,
			configurable: true,
			get: () => {
				// by path: the package's "exports" do not list its node files (n8n loads them by path too)
				const { ToolExecutor } = req(join(process.env.N8N_RUNTIME ?? '', 'node_modules/@n8n/n8n-nodes-langchain/dist/nodes/ToolExecutor/ToolExecutor.node.js'));
				const t = new ToolExecutor();
				Object.defineProperty(types, '@n8n/n8n-nodes-langchain.toolExecutor', { value: t, enumerable: true });
				return t;
			},
		});
		return types;
	},
});

const { Workflow } = wf;
const { createDeferredPromise } = n8nRequire('@n8n/utils/promise/deferred-promise');
const { WorkflowExecute, ExecutionLifecycleHooks } = core;

let executions = 0;

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

	const data = additionalData({ credentialsHelper, hooks, executionId, workflowId: workflow.id });

	// A full manual run, as n8n's ManualExecutionService starts one: WorkflowExecute.run() from the trigger,
	// with the workflow's pinned data (if any) standing in for node outputs.
	const t0 = performance.now();
	const execute = new WorkflowExecute(data, 'manual');
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

/** What n8n's CredentialsTester does for a function test: find the node's `testedBy` function and call it. */
async function testCredential(data, credType = 'securityServiceApi') {
	const type = nodeTypes.getByName('CUSTOM.securityService');
	const testedBy = type.description.credentials.find((c) => c.name === credType)?.testedBy;
	const fn = typeof testedBy === 'string' ? type.methods?.credentialTest?.[testedBy] : undefined;
	if (typeof fn !== 'function') throw new Error(`the node names no credential test function (testedBy: ${String(testedBy)})`);
	return await fn.call(new core.CredentialTestContext(), { id: 'cred-under-test', name: credType, type: credType, data });
}

await serveCommands(
	answer,
	{ n8nCore: n8nRequire('n8n-core/package.json').version, n8nWorkflow: n8nRequire('n8n-workflow/package.json').version, n8n: n8nRequire('n8n/package.json').version, node: process.version },
	{
		setCredential: (m) => setCredential(m.credId, m.name, m.data),
		getCredential: (m) => getCredential(m.credId),
		run: (m) => run(m.workflow),
		testCredential: (m) => testCredential(m.data, m.credType),
	},
);

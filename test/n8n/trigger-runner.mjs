// In-process n8n runner for the Security Service Trigger (polling) node. Run it with the cached n8n runtime's
// Node 24, like inprocess-runner.mjs (same protocol: one JSON command per line on stdin, one JSON answer per line
// on stdout prefixed with MARK; everything n8n prints goes to stderr).
//
// Polling runs through n8n's own code, the way an active workflow polls in n8n 2.40.x:
//   - the node type gets n8n's polling parameters ("Poll Times") from n8n-core's DirectoryLoader, as when n8n loads it;
//   - activation = n8n-core's ActiveWorkflowTriggers.addAllTriggers(..., mode 'trigger', activation 'activate'),
//     which reads pollTimes, runs the activation poll through PollTriggerExecutor (testingTrigger = true) and
//     registers the poll cron with n8n-core's ScheduledTaskManager; then the static data is saved, as
//     ActiveWorkflowManager.add does;
//   - a poll tick = firing that registered cron job (cron's CronJob.fireOnTick, what the clock would do), which
//     runs PollTriggerExecutor (testingTrigger = false): TriggersAndPollers.runPollFunction → node.poll() with an
//     n8n-core PollContext → __emit when the poll returned data;
//   - static data: the Workflow object stays in memory between polls (as in ActiveWorkflowTriggers), node static
//     data comes from workflow.getStaticData('node', node) (n8n's non-durable path), and __emit saves it to the
//     "database" when __dataChanged is set (WorkflowStaticDataService.saveStaticData). Deactivate + activate
//     rebuilds the Workflow from the saved JSON, like an n8n restart;
//   - manual mode = WorkflowExecute.run(manual) with the trigger as start node, which calls
//     WorkflowExecute.executePollNode → node.poll() with PollContext(mode 'manual') ("Fetch Test Event").
// Credentials: n8n's CLI CredentialsHelper over an encrypted in-memory credentials table (as inprocess-runner.mjs).
//
// Commands:
//   {id, cmd: 'setCredential', credId, name, data}   {id, cmd: 'getCredential', credId}
//   {id, cmd: 'activate', workflow}     → {polls, emitted, errors, saved, memory}
//   {id, cmd: 'tick', workflowId}       → {polls, emitted, errors, saved, memory}   (one cron tick)
//   {id, cmd: 'deactivate', workflowId} → {saved}
//   {id, cmd: 'manual', workflow}       → {status, error, items}
//   {id, cmd: 'exit'}
// `emitted`: what the polls of this command handed to __emit (one entry per emit: output 0's item json);
// `saved`: the static data in the "database"; `memory`: the in-memory workflow static data.
// Environment: N8N_RUNTIME, SECSVC_DIST, N8N_USER_FOLDER, N8N_ENCRYPTION_KEY.
import { join } from 'node:path';
import { additionalData, bootN8nRuntime, serializeError, serveCommands } from './n8n-runtime.mjs';

export const MARK = '@@secsvc-trigger@@ ';

const { answer, n8nRequire, Container, wf, core, nodeTypes, credentialsHelper, setCredential, getCredential } = bootN8nRuntime({
	mark: MARK,
	runner: 'trigger-runner.mjs',
	nodes: ({ n8nRequire: req, distRoot, core: c }) => {
		const { SecurityServiceTrigger } = req(join(distRoot, 'nodes/SecurityServiceTrigger/SecurityServiceTrigger.node.js'));
		// The node type as n8n's loader prepares it: polling nodes get the "Poll Times" parameter.
		const triggerType = new SecurityServiceTrigger();
		c.DirectoryLoader.prototype.applySpecialNodeParameters.call(c.DirectoryLoader, triggerType);
		if (!triggerType.description.properties.some((p) => p.name === 'pollTimes')) {
			throw new Error("n8n's loader did not add pollTimes to the polling node: update trigger-runner.mjs");
		}
		return { 'CUSTOM.securityServiceTrigger': triggerType };
	},
});
const { createDeferredPromise } = n8nRequire('@n8n/utils/promise/deferred-promise');

const { Workflow } = wf;
const { WorkflowExecute, ExecutionLifecycleHooks, ActiveWorkflowTriggers, ScheduledTaskManager, PollContext, InstanceSettings, DirectoryLoader } = core;
for (const [name, v] of Object.entries({ ActiveWorkflowTriggers, ScheduledTaskManager, PollContext, InstanceSettings, DirectoryLoader })) {
	if (typeof v !== 'function') throw new Error(`n8n-core no longer exports ${name}: update trigger-runner.mjs`);
}

// A single main instance is the leader (n8n's start command marks it): only the leader registers and fires crons.
const instanceSettings = Container.get(InstanceSettings);
if (!instanceSettings.isLeader) instanceSettings.markAsLeader();

let executions = 0;
function baseAdditionalData(workflowId, hooks) {
	return additionalData({ credentialsHelper, hooks, executionId: String(++executions), workflowId });
}

// ------------------------------------------------------------------------------------------ active workflows

const activeTriggers = Container.get(ActiveWorkflowTriggers);
const scheduler = Container.get(ScheduledTaskManager);
/** The workflows table: id → { doc, staticData (JSON as saved) }. */
const db = new Map();
/** Active workflows: id → { workflow, log: {polls, emitted, errors}, inFlight: Set<Promise> }. */
const active = new Map();

const clone = (v) => JSON.parse(JSON.stringify(v ?? {}));

/** WorkflowStaticDataService.saveStaticData: persist when the workflow's static data changed. */
function saveStaticData(workflow) {
	if (workflow.staticData.__dataChanged === true) {
		db.get(workflow.id).staticData = clone(workflow.staticData);
		workflow.staticData.__dataChanged = false;
	}
}

function report(id) {
	const a = active.get(id);
	const out = { ...a.log, saved: clone(db.get(id).staticData), memory: clone(a.workflow.staticData) };
	a.log = { polls: 0, emitted: [], errors: [] };
	return out;
}

/** The poll functions factory n8n's ActiveWorkflowManager hands to ActiveWorkflowTriggers (non-durable path). */
function getPollFunctionsFor(entry) {
	return (workflow, node, additionalData, mode, activation) =>
		new PollContext(
			workflow,
			node,
			additionalData,
			mode,
			activation,
			// __emit: n8n saves the static data, then starts an execution with the data (recorded here).
			(data) => {
				saveStaticData(workflow);
				entry.log.emitted.push((data?.[0] ?? []).map((i) => i.json));
			},
			// __emitError: n8n records a failed execution.
			(error) => entry.log.errors.push(serializeError(error)),
			async () => {},
			// __runPoll: no durable cursor → run the poll as is (tracked so a tick can wait for it).
			async (poll) => {
				entry.log.polls++;
				const p = poll();
				const settled = p.then(
					() => new Promise((r) => setImmediate(r)),
					() => new Promise((r) => setImmediate(r)),
				);
				entry.inFlight.add(settled);
				void settled.then(() => entry.inFlight.delete(settled));
				return await p;
			},
		);
}

async function activate(doc) {
	const id = doc.id;
	if (active.has(id)) throw new Error(`workflow ${id} is already active`);
	if (!db.has(id)) db.set(id, { doc, staticData: {} });
	const row = db.get(id);
	row.doc = doc;
	const workflow = new Workflow({
		id,
		name: doc.name ?? id,
		nodes: doc.nodes,
		connections: doc.connections ?? {},
		active: true,
		nodeTypes,
		settings: { executionOrder: 'v1' },
		staticData: clone(row.staticData),
	});
	const entry = { workflow, log: { polls: 0, emitted: [], errors: [] }, inFlight: new Set() };
	active.set(id, entry);
	const additionalData = baseAdditionalData(id, undefined);
	try {
		await activeTriggers.addAllTriggers(id, workflow, additionalData, 'trigger', 'activate', () => {
			throw new Error('no trigger-function nodes here');
		}, getPollFunctionsFor(entry));
	} catch (e) {
		active.delete(id);
		throw e;
	}
	// ActiveWorkflowManager.add saves the static data after the triggers are added.
	saveStaticData(workflow);
	return report(id);
}

/** One tick of the poll cron n8n registered for the workflow (what the clock would fire). */
async function tick(id) {
	const entry = active.get(id);
	if (!entry) throw new Error(`workflow ${id} is not active`);
	const crons = scheduler.getGroupCrons({ type: 'workflow', id });
	if (!crons || crons.size !== 1) throw new Error(`expected one registered poll cron for ${id}, found ${crons?.size ?? 0}`);
	const [{ job }] = [...crons.values()];
	const before = entry.log.polls;
	await job.fireOnTick();
	// The cron callback starts the poll without awaiting it (void executePollTrigger()): wait for it to settle.
	const until = Date.now() + 5000;
	while (entry.log.polls === before && Date.now() < until) await new Promise((r) => setTimeout(r, 1));
	if (entry.log.polls === before) throw new Error('the cron tick did not start a poll');
	while (entry.inFlight.size) await Promise.all([...entry.inFlight]);
	await new Promise((r) => setImmediate(r));
	return report(id);
}

async function deactivate(id) {
	const entry = active.get(id);
	if (!entry) throw new Error(`workflow ${id} is not active`);
	await activeTriggers.remove(id);
	saveStaticData(entry.workflow);
	active.delete(id);
	if (scheduler.getGroupCrons({ type: 'workflow', id })?.size) throw new Error('poll cron still registered after remove');
	return { saved: clone(db.get(id).staticData) };
}

// ------------------------------------------------------------------------------------------ manual mode

async function manual(doc) {
	const executionId = String(++executions);
	const workflow = new Workflow({
		id: doc.id ?? `wf-manual-${executionId}`,
		name: doc.name ?? 'manual',
		nodes: doc.nodes,
		connections: doc.connections ?? {},
		active: false,
		nodeTypes,
		settings: { executionOrder: 'v1' },
		staticData: clone(doc.staticData),
	});
	const hooks = new ExecutionLifecycleHooks('manual', executionId, { ...doc, active: false, settings: {} });
	const done = createDeferredPromise();
	hooks.addHandler('workflowExecuteAfter', (fullRunData) => done.resolve(fullRunData));
	const execute = new WorkflowExecute(baseAdditionalData(workflow.id, hooks), 'manual');
	await execute.run({ workflow, startNode: workflow.getNode(doc.nodes[0].name) });
	const result = await done.promise;
	const task = result.data.resultData.runData?.[doc.nodes[0].name]?.[0];
	return {
		status: result.status,
		error: serializeError(result.data.resultData.error),
		items: (task?.data?.main?.[0] ?? []).map((i) => i.json),
		staticData: clone(workflow.staticData),
	};
}

await serveCommands(
	answer,
	{ n8nCore: n8nRequire('n8n-core/package.json').version, n8n: n8nRequire('n8n/package.json').version, node: process.version },
	{
		setCredential: (m) => setCredential(m.credId, m.name, m.data),
		getCredential: (m) => getCredential(m.credId),
		activate: (m) => activate(m.workflow),
		tick: (m) => tick(m.workflowId),
		deactivate: (m) => deactivate(m.workflowId),
		manual: (m) => manual(m.workflow),
	},
	async () => {
		for (const id of [...active.keys()]) await deactivate(id).catch(() => {});
	},
);

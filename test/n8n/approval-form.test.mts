// The approval example (examples/n8n/attack-approval-form.json) in the real n8n 2.40.7 in server mode (`n8n start`),
// with a real Temporal dev server (its HTTP API), the worker process and the simulator. The file is imported as it
// is (the package is installed in ~/.n8n/nodes, as Settings › Community Nodes does, so the node types keep the
// package's name), except that the notify URL points at a local stand-in for the chat tool. The attack alert arrives on the example's Webhook
// (the stand-in for the attack trigger); the on-call form is fetched and submitted over HTTP as a browser does
// (GET the form-waiting URL, POST multipart/form-data to it): first by mallory (not in approval.approvers: refused,
// the runbook still waits, the form shows the refusal), then by oncall-alice (accepted: the runbook mitigates).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { startSimulator } from '../../simulator/index.mts';
import { startTemporalDev, startWorkerProcess, type TemporalDev, type WorkerProcess } from '../../demo/stack.mts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { APP_ID, ATTACK_SOURCES, SECRET } from '../temporal/helpers.mts';
import { startN8nServer, type N8nServer } from './editor-server.mts';
import { n8nCli, packPackage, ROOT } from './harness.mts';
import { scratchDir } from '../helpers/scratch.mts';

const WF_ID = 'wfApprovalForm01';
let sim: Awaited<ReturnType<typeof startSimulator>>;
let temporal: TemporalDev;
let worker: WorkerProcess;
let n8n: N8nServer;
let connection: Connection;
let client: Client;
let notify: Server;
const notices: any[] = [];
let waiter: (() => void) | undefined;

const log = (m: string) => process.stderr.write(`[approval form] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
	const deadline = Date.now() + ms;
	for (;;) {
		// a request that fails or hangs (n8n still starting, a closed keep-alive socket) is tried again
		const v = await f().catch(
			(e: Error) => (log(`${what}: ${e.message} ${(e.cause as Error)?.message ?? ''}`), undefined),
		);
		if (v !== undefined) return v;
		if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}\n${n8n?.log().slice(-3000)}`);
		await sleep(250);
	}
}

before(async () => {
	sim = await startSimulator({ port: 0, appId: APP_ID, secret: SECRET, seed: 7 });
	temporal = await startTemporalDev();
	worker = await startWorkerProcess({
		temporalAddress: temporal.address,
		taskQueue: 'secsvc-runbooks',
		simUrl: sim.url,
		appId: APP_ID,
		secret: SECRET,
	});
	connection = await Connection.connect({ address: temporal.address });
	client = new Client({ connection, namespace: 'default' });
	notify = createServer((req, res) => {
		let body = '';
		req.on('data', (d) => (body += d));
		req.on('end', () => {
			notices.push(JSON.parse(body || '{}'));
			waiter?.();
			res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
		});
	});
	await new Promise<void>((r) => notify.listen(0, '127.0.0.1', r));
	const notifyUrl = `http://127.0.0.1:${(notify.address() as { port: number }).port}/chat`;

	const work = scratchDir('secsvc-approval-form-');
	// as a user imports it: the server installs the package in ~/.n8n/nodes, so the node types keep the package's name
	const wf = JSON.parse(readFileSync(join(ROOT, 'examples/n8n/attack-approval-form.json'), 'utf8'));
	for (const n of wf.nodes) if (n.type === 'n8n-nodes-base.httpRequest') n.parameters.url = notifyUrl;
	writeFileSync(join(work, 'wf.json'), JSON.stringify([{ ...wf, id: WF_ID, active: false }]));
	writeFileSync(
		join(work, 'creds.json'),
		JSON.stringify([
			{
				id: 'temporalCred001',
				name: 'Temporal API',
				type: 'temporalApi',
				data: { address: temporal.httpUrl, namespace: 'default', apiKey: '' },
			},
		]),
	);
	n8n = await startN8nServer(packPackage(join(work, 'pack')), async (home) => {
		for (const args of [
			['import:credentials', `--input=${join(work, 'creds.json')}`],
			['import:workflow', `--input=${join(work, 'wf.json')}`],
			['publish:workflow', `--id=${WF_ID}`],
		]) {
			const r = await n8nCli(home, args);
			assert.equal(r.code, 0, `n8n ${args[0]} failed:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
		}
	});
});

after(async () => {
	if (process.env.APPROVAL_FORM_LOG) writeFileSync(process.env.APPROVAL_FORM_LOG, n8n?.log() ?? '');
	await n8n?.stop();
	await connection?.close().catch(() => {});
	await worker?.stop();
	await temporal?.stop();
	await sim?.close();
	await new Promise((r) => notify?.close(r));
});

/** Submits the on-call form the way the page's own script does: multipart/form-data POST to the form-waiting URL. */
async function submit(formUrl: string, identity: string, decision: 'Approve' | 'Reject', reason = '') {
	const form = new FormData();
	form.append('field-0', identity);
	form.append('field-1', decision);
	form.append('field-2', reason);
	const r = await fetch(formUrl, { method: 'POST', body: form, signal: AbortSignal.timeout(30_000) });
	const text = await r.text();
	assert.equal(r.status, 200, `form submission: HTTP ${r.status} ${text}`);
}

test('attack → runbook → on-call form: a non-approver is refused (runbook still waits), oncall-alice approves, the runbook mitigates', async () => {
	const t0 = Date.now();
	const ids = sim.sim.firstIds();
	sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const wid = `attack-response-${ids.site_id}`;

	log('attack alert → webhook');
	// the published workflow's webhook is registered while n8n finishes starting
	const hook = await until('the webhook answers', 30_000, async () => {
		const r = await fetch(`${n8n.url}/webhook/secsvc-attack-approval`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ site_id: ids.site_id, customer_id: ids.customer_id, domain_port_id: ids.domain_port_id }),
			signal: AbortSignal.timeout(15_000),
		});
		const text = await r.text();
		return r.status === 404 ? undefined : { status: r.status, text };
	});
	assert.equal(hook.status, 200, hook.text);

	const notice = await until('the on-call notice', 60_000, async () => notices[0]);
	assert.equal(notice.runbook, wid);
	assert.ok(
		Array.isArray(notice.changes) && notice.changes.length > 0,
		`planned changes in the notice: ${JSON.stringify(notice)}`,
	);
	const formUrl = String(notice.formUrl);
	assert.match(formUrl, /^http:\/\/127\.0\.0\.1:\d+\/form-waiting\/\d+/);

	// the form the engineer opens: the planned changes and the questions
	const page = await until('the form page', 30_000, async () => {
		const r = await fetch(formUrl, { signal: AbortSignal.timeout(15_000) });
		const html = await r.text();
		return r.status === 200 && html.includes('Your identity') ? html : undefined;
	});
	assert.ok(page.includes('Approve the attack response?'), 'form title');
	assert.ok(page.includes(wid), 'the runbook is named');
	assert.ok(
		page.includes(String(notice.changes[0]).slice(0, 20)),
		`the planned changes are shown (${notice.changes[0]})`,
	);
	const h = client.workflow.getHandle(wid);
	assert.equal((await h.query(stateQuery)).phase, 'awaiting-approval');

	log('mallory submits the form');
	await submit(formUrl, 'mallory', 'Approve');
	// the refusal comes back into the execution, which asks again: the same form URL shows the refusal
	const again = await until('the form again, with the refusal', 30_000, async () => {
		const r = await fetch(formUrl, { signal: AbortSignal.timeout(15_000) });
		const html = await r.text();
		return r.status === 200 && html.includes('mallory is not in approval.approvers') ? html : undefined;
	});
	assert.match(
		again,
		/The last answer was refused: Decision refused — By: mallory is not in approval\.approvers; nothing changed/,
	);
	const st = await h.query(stateQuery);
	assert.equal(st.phase, 'awaiting-approval', 'the runbook still waits');
	assert.equal(st.approval, undefined, 'no decision recorded');

	log('oncall-alice submits the form');
	await submit(formUrl, 'oncall-alice', 'Approve', 'confirmed on the traffic graph');
	const mitigating = await until('the runbook mitigates', 60_000, async () => {
		const s = await h.query(stateQuery);
		return s.phase === 'waiting' ? s : undefined;
	});
	assert.equal(mitigating.approval?.decision, 'approved');
	assert.equal(mitigating.approval?.by, 'oncall-alice');
	assert.equal(mitigating.approval?.via, 'n8n');
	assert.equal(mitigating.approval?.reason, 'confirmed on the traffic graph');
	// the form is answered: the execution no longer waits on it
	await until('the execution finished', 30_000, async () => {
		const html = await (await fetch(formUrl, { signal: AbortSignal.timeout(15_000) })).text();
		return html.includes('Your identity') ? undefined : true;
	});
	assert.equal(notices.length, 1, 'one notice for one attack');
	log(`done in ${Date.now() - t0} ms`);
});

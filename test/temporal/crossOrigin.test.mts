/**
 * Nothing cross-origin (issue 41 item 3): what the demo starts refuses a web page's write. Through the demo's guard in
 * front of the dev server's HTTP API (worker/src/process/httpGuard.mts): a cross-origin text/plain POST of a signal
 * (403), a text/plain POST without an Origin (415), a cross-site-marked JSON POST (403) — none reaches the workflow
 * (no signal in its history) — while a plain client's JSON signal is delivered. The server's own HTTP port, which a
 * page could find by scanning, refuses a browser's Host. The simulator's control API refuses the same page.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { startTemporalDev, type TemporalDev } from '../../demo/stack.mts';
import { startSim } from './helpers.mts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';

let dev: TemporalDev;
let connection: Connection;
let client: Client;
before(async () => {
	dev = await startTemporalDev({ guardHttp: true });
	connection = await Connection.connect({ address: dev.address });
	client = new Client({ connection, namespace: dev.namespace });
});
after(async () => {
	await connection?.close();
	await dev?.stop();
});

const signalBody = JSON.stringify({ signalName: 'abort', input: { payloads: [] } });
const post = (base: string, id: string, headers: Record<string, string>, body = signalBody) =>
	fetch(`${base}/api/v1/namespaces/${dev.namespace}/workflows/${id}/signal/abort`, { method: 'POST', headers, body });
const signals = async (id: string) =>
	((await client.workflow.getHandle(id).fetchHistory()).events ?? []).filter(
		(e) => e.workflowExecutionSignaledEventAttributes,
	).length;

test("the demo's Temporal HTTP API refuses a web page's cross-origin or text/plain write; a plain client's JSON write works", async () => {
	const id = `cross-origin-${process.pid}`;
	// a run nobody polls, only to receive signals: its input is never read
	await client.workflow.start(WORKFLOW_TYPE.attackResponse, { taskQueue: 'nobody-polls', workflowId: id, args: [{}] });
	const page = { origin: 'https://evil.example', 'content-type': 'text/plain' };
	let r = await post(dev.httpUrl, id, page);
	assert.equal(r.status, 403, await r.text());
	r = await post(dev.httpUrl, id, { 'content-type': 'text/plain' });
	assert.equal(r.status, 415);
	assert.match(
		((await r.json()) as { message: string }).message,
		/content-type must be application\/json \(got text\/plain\)/,
	);
	r = await post(dev.httpUrl, id, { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' });
	assert.equal(r.status, 403, await r.text());
	r = await post(dev.httpUrl, id, { origin: 'null', 'content-type': 'application/json' });
	assert.equal(r.status, 403, await r.text());
	assert.equal(await signals(id), 0, 'no refused write reached the workflow');
	// the server's own port: a browser sends Host 127.0.0.1:<port>, which the server does not answer
	assert.ok(dev.serverHttpUrl);
	r = await post(dev.serverHttpUrl, id, { 'content-type': 'application/json' });
	assert.equal(r.status, 403, `direct to the server: ${await r.text()}`);
	assert.equal(await signals(id), 0, 'nor did a write to the server port');
	// a plain client (the Runbook node, curl): delivered
	r = await post(dev.httpUrl, id, { 'content-type': 'application/json' });
	assert.equal(r.status, 200, await r.text());
	assert.equal(await signals(id), 1);
	await client.workflow.getHandle(id).terminate('test done');
});

test("the simulator's control API refuses the same page (and takes a plain client's JSON)", async () => {
	const s = await startSim(43);
	try {
		const r = await fetch(`${s.url}/__sim/faults`, {
			method: 'POST',
			headers: { origin: 'https://evil.example', 'content-type': 'text/plain' },
			body: JSON.stringify({ status: 500, times: 1 }),
		});
		assert.equal(r.status, 403, await r.text());
		const r2 = await fetch(`${s.url}/__sim/faults`, {
			method: 'POST',
			headers: { 'content-type': 'text/plain' },
			body: JSON.stringify({ status: 500, times: 1 }),
		});
		assert.equal(r2.status, 415);
		assert.deepEqual(s.sim.faults, [], 'no fault installed');
	} finally {
		await s.close();
	}
});

// `secsvc sandbox` refuses bad input before it starts anything (exit 2, one message naming the option): an unknown
// option, a bad port, two parts on one port, a port already taken, no service settings without --simulator.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { freePort } from '../../demo/stack.mts';
import { run } from '../../worker/src/commands/cli.mts';

async function sandbox(args: string[], env: Record<string, string | undefined> = {}) {
	const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
	for (const [k, v] of Object.entries(env))
		if (v === undefined) delete process.env[k];
		else process.env[k] = v;
	let out = '';
	let err = '';
	try {
		const code = await run(['sandbox', ...args], { out: (s) => void (out += s), err: (s) => void (err += s) });
		return { code, out, err };
	} finally {
		for (const [k, v] of Object.entries(saved))
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
	}
}
const service = {
	SECSVC_BASE_URL: 'http://127.0.0.1:9',
	SECSVC_APP_ID: 'a',
	SECSVC_SECRET: 's',
	TEMPORAL_ADDRESS: undefined,
};

test('sandbox: unknown option, bad port, shared port → exit 2 naming the option, nothing started', async () => {
	let r = await sandbox(['--grpc', '7233'], service);
	assert.equal(r.code, 2);
	assert.match(r.err, /^secsvc: sandbox: unknown option --grpc\nusage: secsvc sandbox /);
	r = await sandbox(['--ui-port', '70000'], service);
	assert.equal(r.code, 2);
	assert.match(r.err, /--ui-port: must be a port number 1–65535/);
	const free = await freePort();
	r = await sandbox(['--grpc-port', String(free), '--http-port', String(free)], service);
	assert.equal(r.code, 2);
	assert.match(r.err, new RegExp(`--http-port ${free}: already used by another of the sandbox's ports`));
	r = await sandbox(['--attack-seconds', '0', '--simulator'], service);
	assert.match(r.err, /--attack-seconds: must be an integer of 1–86400 seconds/);
	assert.equal(r.out, '', 'nothing started');
});

test('sandbox: a fixed port that is taken is named, with the flag that changes it', async () => {
	const s = createServer();
	await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
	const port = (s.address() as { port: number }).port;
	try {
		// gRPC and HTTP on free ports (the defaults may be taken on this machine), checked before the UI's
		const [grpc, http] = [await freePort(), await freePort()];
		const r = await sandbox(
			['--grpc-port', String(grpc), '--http-port', String(http), '--ui-port', String(port)],
			service,
		);
		assert.equal(r.code, 2);
		assert.match(
			r.err,
			new RegExp(`--ui-port ${port}: 127\\.0\\.0\\.1:${port} is in use .*give --ui-port another port`),
		);
		assert.equal(r.out, '');
	} finally {
		s.close();
	}
});

test('sandbox without --simulator needs the service settings, named, before anything starts', async () => {
	const r = await sandbox([], {
		SECSVC_BASE_URL: undefined,
		SECSVC_APP_ID: undefined,
		SECSVC_SECRET: undefined,
		SECSVC_CONFIG: undefined,
		TEMPORAL_ADDRESS: undefined,
	});
	assert.equal(r.code, 2);
	assert.match(r.err, /SECSVC_BASE_URL/);
	assert.match(r.err, /or --simulator to rehearse on the simulator/);
	assert.equal(r.out, '');
});

test('sandbox --help prints its usage and starts nothing', async () => {
	const r = await sandbox(['--help'], service);
	assert.equal(r.code, 0);
	assert.match(
		r.out,
		/^usage: secsvc sandbox \[--simulator\] \[--grpc-port 7233\] \[--http-port 7243\] \[--ui-port 8233\]/,
	);
});

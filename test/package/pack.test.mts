// What the npm package holds (`npm pack --dry-run`): the built nodes and credentials, their icons and codex files,
// the README, package.json and the license — no sources, tests, simulator, worker or workflows.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RESOURCES } from '../../api/catalog/labels.ts';
import { ensureBuilt } from '../n8n/inprocess-driver.mts';
import { ROOT } from '../n8n/harness.mts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

function packedFiles(): string[] {
	ensureBuilt();
	const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
		cwd: ROOT,
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'ignore'],
	});
	const [entry] = JSON.parse(out) as Array<{ files: Array<{ path: string }> }>;
	return entry.files.map((f) => f.path).sort();
}

test('the tarball holds dist/, the icons, the README and nothing else', () => {
	const files = packedFiles();
	const allowedTop = new Set(['package.json', 'README.md', 'LICENSE', 'LICENSE.md']);
	const stray = files.filter((f) => !f.startsWith('dist/') && !allowedTop.has(f));
	assert.deepEqual(stray, [], 'files outside dist/ besides package.json, README and license');
	assert.ok(files.includes('README.md'));
	assert.ok(files.includes('package.json'));
	for (const bad of [
		/^dist\/test\//,
		/^dist\/simulator\//,
		/^dist\/worker\//,
		/^dist\/workflows\//,
		/^dist\/bench\//,
		/^dist\/scripts\//,
		/\.mts$/,
		/\.test\./,
		/tsbuildinfo$/,
	]) {
		assert.deepEqual(
			files.filter((f) => bad.test(f)),
			[],
			`no ${bad} in the package`,
		);
	}
	// Every node and credential package.json names is in the tarball, with its icons and codex file.
	for (const p of [...pkg.n8n.nodes, ...pkg.n8n.credentials]) assert.ok(files.includes(p), `${p} missing`);
	for (const node of pkg.n8n.nodes as string[]) {
		const dir = node.slice(0, node.lastIndexOf('/'));
		assert.ok(files.includes(node.replace(/\.js$/, '.json')), `codex of ${node} missing`);
		const icons = files.filter((f) => f.startsWith(`${dir}/`) && f.endsWith('.svg'));
		assert.equal(icons.length, 2, `${dir}: a light and a dark icon`);
	}
});

test('each node has its own icon', () => {
	const icons = (pkg.n8n.nodes as string[]).map((node) => {
		const src = readFileSync(join(ROOT, node.replace(/^dist\//, '').replace(/\.js$/, '.ts')), 'utf8');
		const m = /light: 'file:([^']+)'/.exec(src);
		assert.ok(m, `${node}: no light icon`);
		const dir = node.replace(/^dist\//, '').slice(0, node.replace(/^dist\//, '').lastIndexOf('/'));
		return readFileSync(join(ROOT, dir, m[1]), 'utf8');
	});
	assert.equal(new Set(icons).size, icons.length, 'two nodes share an icon');
});

test('the README is the page a user reads: install, credentials, every resource, compatibility', () => {
	const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
	const userPart = readme.slice(0, readme.indexOf('*The rest of this page is for developers'));
	assert.ok(userPart.length > 1000, 'the user part comes first');
	for (const h of [
		'## Installation',
		'## Credentials',
		'## Nodes and operations',
		'## Compatibility',
		'## Usage',
		'## Run the runbooks',
		'## Runbook plans',
		'## Resources',
	])
		assert.ok(userPart.includes(h), `README lacks ${h}`);
	// issue 40: the worker in at most 10 lines, from the package alone (its install and `secsvc sandbox`)
	const at = userPart.indexOf('## Run the runbooks\n');
	const run = userPart
		.slice(at, userPart.indexOf('\n## ', at + 1))
		.trim()
		.split('\n')
		.slice(1);
	assert.ok(run.join('').trim() && run.length <= 1 + 10, `"Run the runbooks" has ${run.length - 1} lines`);
	const flat = run.join(' ').replace(/\s+/g, ' ');
	for (const w of [
		'npm install @security-service/worker',
		'secsvc sandbox',
		':7233',
		':7243',
		':8233',
		'TEMPORAL_ADDRESS',
	])
		assert.ok(flat.includes(w), `"Run the runbooks" names ${w}`);
	for (const r of RESOURCES)
		assert.ok(userPart.includes(`**${r.label}**`), `README does not list the resource ${r.label}`);
	assert.ok(userPart.includes(pkg.name));
	// Documentation links of the nodes and credentials point at the package's homepage.
	const home = String(pkg.homepage).replace(/#.*$/, '');
	for (const f of [
		'nodes/SecurityService/SecurityService.node.json',
		'nodes/SecurityServiceTrigger/SecurityServiceTrigger.node.json',
		'nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.json',
	]) {
		const codex = JSON.parse(readFileSync(join(ROOT, f), 'utf8'));
		for (const d of [...codex.resources.primaryDocumentation, ...codex.resources.credentialDocumentation])
			assert.ok(String(d.url).startsWith(home), `${f}: ${d.url}`);
	}
	for (const f of ['credentials/SecurityServiceApi.credentials.ts', 'credentials/TemporalApi.credentials.ts']) {
		const url = /documentationUrl = '([^']+)'/.exec(readFileSync(join(ROOT, f), 'utf8'))?.[1];
		assert.ok(url?.startsWith(home), `${f}: ${url}`);
	}
});

test('the CI and publish workflows pass actionlint, and publishing uses npm provenance', () => {
	const bin = execFileSync('bash', [join(ROOT, 'scripts/actionlint.sh'), 'path'], {
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'inherit'],
	}).trim();
	assert.ok(existsSync(bin));
	const wf = ['.github/workflows/ci.yml', '.github/workflows/publish.yml'];
	for (const f of wf) assert.ok(existsSync(join(ROOT, f)), `${f} missing`);
	// actionlint exits non-zero and prints the problems when a workflow is wrong.
	execFileSync(bin, ['-no-color', ...wf], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
	const publish = readFileSync(join(ROOT, '.github/workflows/publish.yml'), 'utf8');
	assert.match(publish, /npm publish --provenance/);
	assert.match(publish, /id-token: write/);
	const ci = readFileSync(join(ROOT, '.github/workflows/ci.yml'), 'utf8');
	assert.match(ci, /bash \.ci\/run/);
});

test('`npm install` of the packed tarball in ~/.n8n/nodes adds only this package (no n8n-workflow, no isolated-vm)', () => {
	ensureBuilt();
	const tmp = mkdtempSync(join(tmpdir(), 'secsvc-nodes-'));
	try {
		const tgz = execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp], {
			cwd: ROOT,
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'ignore'],
		})
			.trim()
			.split('\n')
			.pop()!;
		const nodes = join(tmp, '.n8n', 'nodes');
		mkdirSync(nodes, { recursive: true });
		// As the README says: a plain `npm install` (npm ≥ 7 installs peers unless they are optional). --offline: a
		// package it would have to fetch fails the install instead of passing unnoticed.
		execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', join(tmp, tgz)], {
			cwd: nodes,
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		const installed = readdirSync(join(nodes, 'node_modules')).filter((n) => !n.startsWith('.'));
		assert.deepEqual(installed, [pkg.name]);
	} finally {
		rmSync(tmp, { recursive: true, force: true });
	}
});

test('docs links: the nodes set an absolute documentationUrl at a README section (n8n opens it as it is)', async () => {
	const { docsUrl, README_URL } = await import('../../nodes/docs.ts');
	const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
	const anchors = new Set(
		[...readme.matchAll(/^#+ (.+)$/gm)].map((m) =>
			m[1]
				.toLowerCase()
				.replace(/[^\w\- ]/g, '')
				.replace(/ /g, '-'),
		),
	);
	for (const f of [
		'nodes/SecurityService/SecurityService.node.ts',
		'nodes/SecurityServiceTrigger/SecurityServiceTrigger.node.ts',
		'nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.ts',
	]) {
		const section = /documentationUrl: docsUrl\('([^']+)'\)/.exec(readFileSync(join(ROOT, f), 'utf8'))?.[1];
		assert.ok(section && anchors.has(section), `${f}: documentationUrl names no README section (${section})`);
		assert.ok(docsUrl(section).startsWith(README_URL));
	}
	assert.ok(String(pkg.homepage).startsWith(README_URL));
});

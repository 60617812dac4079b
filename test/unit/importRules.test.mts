/**
 * The "May import" rules of the folders' READMEs (README.md "For developers", api/, nodes/, credentials/,
 * workflows/, worker/README.md), checked over the real import graph of the production code: a new import that
 * breaks a rule fails here, naming the file, the import and the rule. KNOWN lists the imports that broke a rule
 * before the rule was checked (issue 38); each must still exist (a mended one is taken off the list), so the list
 * only shrinks.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HOST_FILE } from '../../workflows/playbooks.mts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCES = ['api', 'credentials', 'nodes', 'simulator', 'workflows', 'worker/src'];
const NODE = builtinModules.flatMap((m) => [m, `node:${m}`]);
const TEMPORAL_WF = ['@temporalio/workflow', '@temporalio/common', 'zod'];

/**
 * Room of a repository path: worker/src/<room>, nodes/<node>[/transport], workflows/<playbook>, the host side of a
 * playbook (workflows/<playbook>/host: its activities, client and command files, run by the worker and the CLI), or
 * the top folder.
 */
export function roomOf(path: string): string {
	const p = path.split('/');
	if (p[0] === 'workflows' && HOST_FILE.test(path)) return `${p.slice(0, 2).join('/')}/host`;
	if (p[0] === 'worker') return p.slice(0, 3).join('/');
	if (p[0] === 'nodes')
		return p.length > 2 ? p.slice(0, 2).join('/') + (p[2] === 'transport' ? '/transport' : '') : 'nodes';
	if (p[0] === 'workflows') return p.length > 2 ? p.slice(0, 2).join('/') : 'workflows';
	return p[0];
}

type Rule = { rooms: (string | RegExp)[]; packages: (string | RegExp)[] | 'any'; why: string };
/** The bundled workflow code (every folder of workflows/ but the bundle entry and the playbooks' host side). */
const wfShared = /^workflows(\/(?!index)(?!.*\/host$).*)?$/;
/** The worker's kernel, below the playbooks: what a playbook's host side builds on. */
const KERNEL = [
	'worker/src/service',
	'worker/src/identity',
	'worker/src/temporal',
	'worker/src/activities',
	'worker/src/process',
];
const node = (n: string): Rule => ({
	rooms: ['api', 'nodes', `nodes/${n}`, `nodes/${n}/transport`],
	packages: ['n8n-workflow', 'node:crypto'],
	why: `nodes/README.md: a node imports n8n-workflow, node:crypto, api/ and its own files`,
});
const RULES: Record<string, Rule> = {
	api: { rooms: ['api'], packages: ['zod'], why: 'api/README.md: zod and relative files only (n8n cloud rules)' },
	credentials: {
		rooms: ['api', 'nodes/SecurityService/transport'],
		packages: ['n8n-workflow'],
		why: 'credentials/README.md: n8n-workflow, api/, the main node transport',
	},
	'nodes/SecurityService': node('SecurityService'),
	'nodes/SecurityService/transport': node('SecurityService'),
	'nodes/SecurityServiceRunbook': node('SecurityServiceRunbook'),
	'nodes/SecurityServiceRunbook/transport': node('SecurityServiceRunbook'),
	'nodes/SecurityServiceTrigger': {
		...node('SecurityServiceTrigger'),
		// The Security Service node's client, and the Runbook node's Temporal transport (Check Runbook Returns).
		rooms: [
			...node('SecurityServiceTrigger').rooms,
			'nodes/SecurityService',
			'nodes/SecurityService/transport',
			'nodes/SecurityServiceRunbook/transport',
		],
	},
	simulator: { rooms: ['simulator', 'api'], packages: NODE, why: 'simulator/README.md: its own reading of the spec' },
	'workflows/pure': {
		rooms: ['workflows/pure', 'api'],
		packages: TEMPORAL_WF,
		why: 'workflows/README.md: pure helpers',
	},
	'workflows/input': {
		rooms: ['workflows/input', 'workflows/pure', 'api'],
		packages: TEMPORAL_WF,
		why: 'workflows/README.md: input checks sit below the playbooks',
	},
	workflows: {
		rooms: [wfShared, 'api'],
		packages: TEMPORAL_WF,
		why: 'workflows/README.md: the bundle entry and the playbook records',
	},
	'worker/src/service': {
		rooms: ['worker/src/service', 'api', wfShared],
		packages: 'any',
		why: 'worker/README.md: service/ imports api',
	},
	'worker/src/identity': {
		rooms: ['worker/src/identity', 'api'],
		packages: 'any',
		why: 'worker/README.md: identity/ imports api',
	},
	'worker/src/temporal': {
		rooms: ['worker/src/temporal', 'api', wfShared],
		packages: 'any',
		why: 'worker/README.md: temporal/ imports process/config.mts and temporalToken.mts, api, workflows',
	},
	'worker/src/activities': {
		rooms: ['worker/src/activities', 'worker/src/service', 'worker/src/temporal', 'api', wfShared],
		packages: 'any',
		why: 'worker/README.md: activities/ import service/, temporal/, api, workflows',
	},
};
/** A playbook's host side: the bundled code, the worker's kernel, other playbooks' host side; never the composition root. */
const hostRule: Rule = {
	rooms: [/^workflows(\/|$)/, 'api', ...KERNEL],
	packages: 'any',
	why: "worker/README.md: a playbook's activities, client and commands sit below the composition root (worker/src/playbooks.mts) and the CLI",
};
/** Every playbook folder of workflows/: the workflow packages, its own and shared folders (not the bundle entry). */
const playbookRule: Rule = { rooms: [wfShared, 'api'], packages: TEMPORAL_WF, why: 'workflows/README.md' };
/** Single files a rule admits beyond its rooms. */
const FILES: Record<string, string[]> = {
	'worker/src/temporal': ['worker/src/process/config.mts', 'worker/src/process/temporalToken.mts'],
	// Every write claims its setting at the site's coordinator: the per-operation activities use its client.
	'worker/src/activities': ['workflows/coordinator/client.mts'],
	// The commands' shared argument checks.
	host: ['worker/src/commands/args.mts'],
};

/** Imports that broke a rule before it was checked: `from -> to`; each must still exist. */
const KNOWN = new Set([
	'credentials/TemporalApi.credentials.ts -> nodes/SecurityServiceRunbook/transport/tls.ts',
	'nodes/SecurityService/transport/clusterToken.ts -> nodes/SecurityServiceRunbook/transport/http.ts',
	'nodes/SecurityService/transport/clusterToken.ts -> nodes/SecurityServiceRunbook/transport/tls.ts',
	'nodes/SecurityServiceRunbook/transport/index.ts -> nodes/SecurityService/transport/bounded.ts',
	'workflows/input/inputRules.mts -> workflows/fleet/shared.mts',
	'workflows/input/inputRules.mts -> workflows/coordinator/coordination.mts',
]);

function sourceFiles(dir: string): string[] {
	return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
		const p = `${dir}/${e.name}`;
		if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'dist' ? [] : sourceFiles(p);
		return /\.m?ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
	});
}

/** Every static and dynamic import (and re-export) of a file: the specifier as written, and whether it is `import type`. */
function importsOf(text: string): [string, boolean][] {
	const re = /(?:^|\n)\s*(?:import|export)\s(type\s)?[^;]*?from\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g;
	return [...text.matchAll(re)].map((m) => [m[2] ?? m[3], !!m[1]]);
}

/** The file an extensionless import (the n8n package's style) or a `.js` one names. */
const resolved = (p: string) =>
	[p, p.replace(/\.js$/, '.ts'), `${p}.ts`, `${p}/index.ts`].find(
		(c) => /\.m?ts$/.test(c) && existsSync(join(ROOT, c)),
	) ?? p;
const matches = (xs: (string | RegExp)[], v: string) => xs.some((x) => (typeof x === 'string' ? x === v : x.test(v)));
const packageOf = (spec: string) =>
	spec
		.split('/')
		.slice(0, spec.startsWith('@') ? 2 : 1)
		.join('/');

function violations(): string[] {
	const out: string[] = [];
	for (const file of SOURCES.flatMap(sourceFiles)) {
		const from = roomOf(file);
		const host = from.startsWith('workflows/') && from.endsWith('/host');
		const rule = host ? hostRule : (RULES[from] ?? (from.startsWith('workflows/') ? playbookRule : undefined));
		if (!rule) continue; // worker/src/process and commands may import everything
		for (const [spec, typeOnly] of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
			if (spec.startsWith('.')) {
				const to = resolved(relative(ROOT, normalize(join(ROOT, dirname(file), spec))));
				if (matches(rule.rooms, roomOf(to)) || FILES[host ? 'host' : from]?.includes(to)) continue;
				// workflow code types its activity proxies from its own factory: `import type` only, erased from the bundle
				if (typeOnly && roomOf(to) === `${from}/host`) continue;
				out.push(`${file} -> ${to}\t(${rule.why})`);
			} else if (rule.packages !== 'any' && !matches(rule.packages, packageOf(spec)) && !matches(rule.packages, spec)) {
				out.push(`${file} -> package ${spec}\t(${rule.why})`);
			}
		}
	}
	return out;
}

test('no import breaks a folder README\'s "May import" rule (beyond the known ones, which only shrink)', () => {
	const found = violations();
	const edges = new Set(found.map((v) => v.split('\t')[0]));
	const fresh = found.filter((v) => !KNOWN.has(v.split('\t')[0]));
	assert.deepEqual(fresh, [], `imports against the rules:\n${fresh.join('\n')}`);
	const mended = [...KNOWN].filter((k) => !edges.has(k));
	assert.deepEqual(mended, [], `mended — take them off KNOWN in this file:\n${mended.join('\n')}`);
});

test('the checker sees an upward import: api importing the worker or a Node built-in, the kernel a playbook, a playbook the composition root', () => {
	const rule = RULES.api;
	assert.equal(matches(rule.rooms, roomOf('worker/src/process/config.mts')), false);
	assert.equal(matches(rule.packages as string[], packageOf('node:fs')), false);
	assert.equal(matches(RULES['workflows/input'].rooms, roomOf('workflows/fleet/shared.mts')), false);
	// a playbook's host side is not workflow code, the kernel does not reach up into it, it does not reach the root
	assert.equal(roomOf('workflows/blocks/activitiesLive.mts'), 'workflows/blocks/host');
	assert.equal(matches(playbookRule.rooms, roomOf('workflows/blocks/client.mts')), false);
	assert.equal(matches(RULES['worker/src/service'].rooms, roomOf('workflows/fleet/command.mts')), false);
	assert.equal(matches(hostRule.rooms, roomOf('worker/src/playbooks.mts')), false);
	assert.equal(matches(hostRule.rooms, roomOf('worker/src/commands/cli.mts')), false);
	assert.deepEqual(
		importsOf(
			`import { a } from './a.ts';\nexport * from "../b.mts";\nconst c = import('./c.mts');\nimport '../d.mts';`,
		),
		[
			['./a.ts', false],
			['../b.mts', false],
			['./c.mts', false],
			['../d.mts', false],
		],
	);
});

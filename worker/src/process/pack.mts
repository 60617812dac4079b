import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './buildInfo.mts';
import { buildWorker, esbuildModule } from './build.mts';
import { buildBundleFile, SHIPPED, sourceHash } from './bundle.mts';
import { DIST } from './launch.mts';

/**
 * What the npm package of the worker and CLI ships (`npm pack` in worker/ runs this as `prepack`; package.json
 * `files` names each file): plain JavaScript in dist/, so an installation needs neither tsx nor the repository (launch.mts PACKAGED):
 *   main.mjs              the worker process (build.mts; its build record is ignored where no sources are)
 *   cli.mjs, launch.mjs   the `secsvc` command, and what `secsvc worker` loads before it becomes the worker
 *   simulator.mjs         the simulator (`secsvc sandbox --simulator`)
 *   workflows.js, workflows-unversioned.js, workflows.json   the workflow bundles and their build id (the source hash)
 *   examples/attack-response.json   the plan the sandbox suggests
 * esbuild (tsx's) joins each entry with the repository files it imports (worker/src, api, workflows, simulator);
 * packages stay external and come from the package's dependencies.
 */

function compile(entry: string, out: string): void {
	esbuildModule().buildSync({
		absWorkingDir: ROOT,
		entryPoints: [join(ROOT, entry)],
		bundle: true,
		platform: 'node',
		format: 'esm',
		target: 'node20',
		packages: 'external',
		outfile: join(DIST, out),
		logLevel: 'error',
		legalComments: 'none',
	});
}

export async function pack(): Promise<void> {
	// dist/ is not emptied first: tests and launchers in this checkout may be starting dist/main.mjs right now (it is
	// replaced atomically); package.json `files` lists exactly what is shipped.
	mkdirSync(join(DIST, 'examples'), { recursive: true });
	buildWorker(join(DIST, 'main.mjs'));
	buildWorker(join(DIST, 'cli.mjs'), join(ROOT, 'worker/src/commands/cli.mts'));
	compile('worker/src/process/launch.mts', 'launch.mjs');
	compile('simulator/main.mts', 'simulator.mjs');
	await buildBundleFile(join(DIST, SHIPPED.versioned));
	await buildBundleFile(join(DIST, SHIPPED.unversioned), { unversioned: true });
	writeFileSync(join(DIST, SHIPPED.record), JSON.stringify({ buildId: sourceHash() }) + '\n');
	copyFileSync(join(ROOT, 'examples/plans/attack-response-demo.json'), join(DIST, 'examples/attack-response.json'));
}

/**
 * After `npm pack` (`postpack`): the workflow bundles leave the checkout. They are webpack output whose comments name
 * rules of the TypeScript lint config, and the root package's `n8n-node lint` lints every .js file outside its own
 * dist/; the tarball holds them already.
 */
export function afterPack(): void {
	for (const f of [SHIPPED.versioned, SHIPPED.unversioned]) rmSync(join(DIST, f), { force: true });
}

if (process.argv[1] && process.argv[1] === join(ROOT, 'worker/src/process/pack.mts')) {
	if (process.argv.includes('--after')) afterPack();
	else
		pack().then(
			() => console.error(`worker package: built ${DIST}`),
			(e) => {
				console.error(`worker package: ${e instanceof Error ? e.message : String(e)}`);
				process.exit(1);
			},
		);
}

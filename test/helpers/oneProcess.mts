// Test files that need no isolation, run in ONE node process: scripts/test.sh's jobs `unit`, `simulator` and
// `temporal-group-N` run this file with SECSVC_ONE_PROCESS_FILES (their paths, space-separated). Node 20's runner starts
// a process per file (it has no --test-isolation=none), and a unit/ or simulator/ file's fixed cost — node, tsx and its
// imports, 0.3–1.8 CPU-s — was most of its CPU; a temporal/ file's ~1.4 (its own dev server and workers stay its own) (test/README.md "What runs in parallel"). Each file is a suite named by its path, one after
// another: its top-level hooks are the suite's, a failure names it, scripts/test-file-times.mjs writes its time, and
// what it started is printed after it when one of its tests failed (started.mts).
import { describe } from 'node:test';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { reportWhatThisFileStarted } from './started.mts';

const files = (process.env.SECSVC_ONE_PROCESS_FILES ?? '').split(/\s+/).filter(Boolean);
if (!files.length) throw new Error('SECSVC_ONE_PROCESS_FILES names no test file');
// read by started.mts when this file imported it; not for the processes the tests start (a fixture's own test run)
delete process.env.SECSVC_ONE_PROCESS_FILES;
for (const file of files)
	void describe(file, async () => {
		reportWhatThisFileStarted();
		await import(pathToFileURL(resolve(file)).href);
	});

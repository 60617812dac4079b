#!/usr/bin/env node
// secsvc: run the worker, start / approve / abort / inspect runbooks, manage schedules, print timelines.
// The sources are TypeScript (.mts, and the shared api/*.ts as CommonJS); tsx compiles them on the fly.
import { register as registerCjs } from 'tsx/cjs/api';
import { register as registerEsm } from 'tsx/esm/api';

registerCjs();
registerEsm();
const { run } = await import('../src/cli.mts');
process.exitCode = await run(process.argv.slice(2));

// tsx (TypeScript sources) for the main thread of a test process only: scripts/test.sh runs the tests with
// `node --import <this file> --test`, and node hands its --import flags to every worker thread of the process too. The
// Temporal SDK starts a workflow thread for each Worker (two per in-process worker: runbooks and coordinators), and
// those load the prebuilt workflow bundle and the SDK's own JavaScript: no TypeScript. With `--import tsx` each such
// thread set up tsx's hooks again and sent its module loads through them: ~0.3 of the ~0.8 CPU-s an in-process
// worker's start took (test/README.md "Where the CPU goes"). Everything else is as with `--import tsx`: the main
// thread, and every process the tests start with the inherited flags, get tsx.
import { isMainThread } from 'node:worker_threads';

if (isMainThread) await import('tsx');

import { ensureCliBuild } from '../../worker/src/process/build.mts';

/**
 * node's arguments for `secsvc ARGS…` as a child process: the compiled command the npm package runs
 * (worker/dist/cli.mjs, rebuilt first when any of its sources changed, so a stale build is never run), not the
 * sources through tsx (bin/secsvc.mjs in a checkout): ~0.6 instead of ~1.3 CPU-s a command.
 */
export function secsvcArgs(...args: string[]): string[] {
	return [ensureCliBuild(), ...args];
}

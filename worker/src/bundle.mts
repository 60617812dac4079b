import { bundleWorkflowCode, type BundleOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';

/**
 * Workflow bundling. The SDK's webpack config compiles `.ts` with swc-loader but not `.mts` (our workflows are
 * `.mts`, see the house rules), so a hook adds the same swc rule for `.mts`. Used by the worker, the replay
 * tests and the CLI.
 */

export const workflowsPath = fileURLToPath(new URL('../../workflows/index.mts', import.meta.url));

type WebpackConfig = { module?: { rules?: unknown[] }; resolve?: { extensions?: string[] } };

export function webpackConfigHook<C>(config: C): C {
	const c = config as unknown as WebpackConfig;
	c.module ??= {};
	c.module.rules ??= [];
	c.module.rules.push({
		test: /\.mts$/,
		exclude: /node_modules/,
		type: 'javascript/esm',
		use: {
			loader: 'swc-loader',
			options: { sourceMap: true, jsc: { target: 'es2017', parser: { syntax: 'typescript' } } },
		},
	});
	c.resolve ??= {};
	c.resolve.extensions = [...(c.resolve.extensions ?? []), '.mts'];
	return config;
}

export const bundlerOptions: BundleOptions['webpackConfigHook'] extends infer H ? { webpackConfigHook: H } : never = {
	webpackConfigHook: webpackConfigHook as never,
};

let cached: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Bundles the workflows once per process. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
	cached ??= bundleWorkflowCode({ workflowsPath, webpackConfigHook: webpackConfigHook as never, logger: quietLogger });
	return cached;
}

const noop = () => {};
const quietLogger = {
	log: noop,
	trace: noop,
	debug: noop,
	info: noop,
	warn: (m: string) => console.warn(m),
	error: (m: string) => console.error(m),
};

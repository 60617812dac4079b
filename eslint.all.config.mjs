// ESLint for all the project's TypeScript (`npm run lint:all`): the .mts code that runs outside the n8n package
// (workflows/, worker/, simulator/, bench/, scripts/, demo/, test/) and the package's own .ts (api/, nodes/,
// credentials/). The package's .ts is also linted by `n8n-node lint` (strict) with eslint.config.mjs, which stays
// n8n's config unchanged. Type-aware: the rules that need types read the two TypeScript projects the code already has.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
	{
		ignores: [
			'**/dist/**',
			'**/node_modules/**',
			'test-output/**',
			'test/n8n/out/**',
			'bench/out/**',
			'.tmp/**',
			'api/types.generated.ts',
		],
	},
	{
		files: ['**/*.ts', '**/*.mts'],
		extends: [js.configs.recommended, tseslint.configs.recommended],
		languageOptions: {
			parserOptions: { project: ['./tsconfig.json', './tsconfig.workers.json'], tsconfigRootDir: import.meta.dirname },
		},
		linterOptions: { reportUnusedDisableDirectives: 'error' },
		rules: {
			// Unused code is either a bug or dead weight; a leading _ marks a parameter kept for its position.
			'@typescript-eslint/no-unused-vars': [
				'error',
				{ argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
			],
			// A promise nobody awaits or catches loses its error (an unhandled rejection ends the process).
			// node:test's test()/describe() return promises the runner itself awaits.
			'@typescript-eslint/no-floating-promises': [
				'error',
				{
					allowForKnownSafeCalls: [
						{
							from: 'package',
							package: 'node:test',
							name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
						},
					],
				},
			],
			eqeqeq: ['error', 'always', { null: 'ignore' }],
			'@typescript-eslint/no-explicit-any': 'error',
			'prefer-spread': 'off',
			// Control characters are matched on purpose: terminal escaping and the checks of ids and printed text.
			'no-control-regex': 'off',
		},
	},
	{
		// Small units (the house rule): a file at most 300 lines, a function at most 80, blank lines and comments not
		// counted. Errors in every production folder; the catalog's data, generated files, tests, bench and scripts are
		// exempt.
		files: ['workflows/**/*.mts', 'worker/src/**/*.mts', 'simulator/**/*.mts', 'api/**/*.ts', 'nodes/**/*.ts', 'credentials/**/*.ts'],
		ignores: ['api/catalog/**', '**/*.generated.*'],
		rules: {
			'max-lines': ['error', { max: 300, skipBlankLines: true, skipComments: true }],
			'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
		},
	},
	{
		// The places left that read deep JSON (n8n's run data, the simulator's control API) through `any`: warnings,
		// to be typed; no other file may add one.
		files: [
			'bench/n8n.mts',
			'test/n8n/approval-form.test.mts',
			'test/n8n/e2e.test.mts',
			'test/n8n/examples.test.mts',
			'test/n8n/harness.mts',
			'test/n8n/inprocess-driver.mts',
			'test/n8n/inprocess.test.mts',
			'test/n8n/trigger.test.mts',
			'test/n8n/workflows.mts',
		],
		rules: { '@typescript-eslint/no-explicit-any': 'warn' },
	},
);

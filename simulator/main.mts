/**
 * CLI: npm run simulator -- --port 8443 --app-id demo-app --secret demo-secret [--scenario file] [--seed N]
 *      [--host 127.0.0.1] [--registered-host https://app.example.com] [--clock real|manual]
 * The secret can also come from a file (--secret-file FILE, first line) or the environment (SECSVC_SIM_SECRET), so
 * it does not show in `ps`; precedence: --secret-file, --secret, SECSVC_SIM_SECRET, then 'demo-secret'.
 */
import { rateLimitProblems, type RateLimitSpec } from './rateLimit.mts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimulator, type Scenario } from './index.mts';
import { checkScenario } from './scenario.mts';

const { values } = parseArgs({
	options: {
		port: { type: 'string', default: '8443' },
		host: { type: 'string', default: '127.0.0.1' },
		'app-id': { type: 'string', default: 'demo-app' },
		secret: { type: 'string' },
		'secret-file': { type: 'string' },
		'registered-host': { type: 'string', default: 'https://app.example.com' },
		scenario: { type: 'string' },
		seed: { type: 'string', default: '1' },
		clock: { type: 'string', default: 'real' },
		/** CUSTOMERSxSITES, e.g. 100x10: a fleet on top of the seeded world (simulator/fleet.mts). */
		fleet: { type: 'string' },
		'log-limit': { type: 'string' },
		/** lenient (default) | strict: who may reach what with which token (simulator/README.md "Tenancy"). */
		tenancy: { type: 'string', default: 'lenient' },
		/** Access-token lifetime in seconds (spec: 7200). */
		'token-ttl': { type: 'string' },
		/** A request rate limit as JSON (simulator/rateLimit.mts), e.g. '{"rps":60,"burst":10,"retryAfterSeconds":1}'. */
		'rate-limit': { type: 'string' },
	},
});

function fail(msg: string): never {
	process.stderr.write(`simulator: ${msg}\n`);
	process.exit(2);
}
let secret = values.secret ?? process.env.SECSVC_SIM_SECRET ?? 'demo-secret';
if (values['secret-file'] !== undefined) {
	try {
		secret = readFileSync(values['secret-file'], 'utf8').split(/\r?\n/)[0];
	} catch (e) {
		fail(`--secret-file: must be a readable file (${(e as Error).message})`);
	}
}
if (!secret) fail('the secret must not be empty');
let scenario: Scenario | undefined;
if (values.scenario) {
	try {
		scenario = JSON.parse(readFileSync(values.scenario, 'utf8')) as Scenario;
		checkScenario(scenario);
	} catch (e) {
		fail(`--scenario ${values.scenario}: ${(e as Error).message}`);
	}
}
if (values.clock !== 'real' && values.clock !== 'manual') throw new Error('--clock must be real or manual');
if (values.tenancy !== 'lenient' && values.tenancy !== 'strict') fail('--tenancy: must be lenient or strict');
const tokenTtl = values['token-ttl'] === undefined ? undefined : Number(values['token-ttl']);
if (tokenTtl !== undefined && (!Number.isInteger(tokenTtl) || tokenTtl < 1 || tokenTtl > 86400))
	fail('--token-ttl: must be an integer of 1-86400 seconds');
let fleet: { customers: number; sitesPerCustomer: number } | undefined;
if (values.fleet) {
	const m = /^(\d+)x(\d+)$/.exec(values.fleet);
	if (!m) throw new Error('--fleet must be CUSTOMERSxSITES, e.g. 100x10');
	fleet = { customers: Number(m[1]), sitesPerCustomer: Number(m[2]) };
}
let rateLimit: RateLimitSpec | undefined;
if (values['rate-limit'] !== undefined) {
	try {
		rateLimit = JSON.parse(values['rate-limit']) as RateLimitSpec;
	} catch {
		fail('--rate-limit must be JSON, e.g. {"rps":60,"burst":10}');
	}
	const p = rateLimitProblems(rateLimit);
	if (p.length) fail(`--rate-limit: ${p.join('; ')}`);
}
const running = await startSimulator({
	port: Number(values.port),
	host: values.host,
	appId: values['app-id'] as string,
	secret,
	registeredHost: values['registered-host'],
	seed: Number(values.seed),
	clock: values.clock,
	scenario,
	fleet,
	...(values['log-limit'] ? { logLimit: Number(values['log-limit']) } : {}),
	tenancy: values.tenancy,
	...(tokenTtl ? { tokenTtl } : {}),
	...(rateLimit ? { rateLimit } : {}),
});
const ids = running.sim.firstIds();
process.stdout.write(`${running.url}\n`);
process.stderr.write(
	`simulator listening on ${running.url} (app_id ${values['app-id']}, seed ${values.seed}); first ids: ${JSON.stringify(ids)}; control API under ${running.url}/__sim/\n`,
);
const stop = () => {
	void running.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

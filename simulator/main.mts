/**
 * CLI: npm run simulator -- [options]; `--help` lists them (help.mts) with the control API.
 * The secret can also come from a file (--secret-file FILE, first line) or the environment (SECSVC_SIM_SECRET), so
 * it does not show in `ps`; precedence: --secret-file, --secret, SECSVC_SIM_SECRET, then 'demo-secret'.
 */
import { rateLimitProblems, type RateLimitSpec } from './rateLimit.mts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimulator, type Scenario } from './index.mts';
import { checkScenario } from './scenario.mts';
import { helpText, OPTIONS, siteNetworkText } from './help.mts';

let values: Record<string, string | boolean | undefined>;
try {
	({ values } = parseArgs({
		options: Object.fromEntries(
			Object.entries(OPTIONS).map(([k, o]) => [
				k,
				{
					type: o.type,
					...(o.short ? { short: o.short } : {}),
					...(o.default !== undefined ? { default: o.default } : {}),
				},
			]),
		) as Record<string, { type: 'string' | 'boolean'; short?: string; default?: string }>,
	}));
} catch (e) {
	process.stderr.write(`simulator: ${(e as Error).message}\n\n${helpText()}`);
	process.exit(2);
}
if (values.help) {
	process.stdout.write(helpText());
	process.exit(0);
}
/** The parsed options: strings with their defaults (help.mts OPTIONS). */
const v = values as {
	port: string;
	host: string;
	'app-id': string;
	secret?: string;
	'secret-file'?: string;
	'registered-host': string;
	scenario?: string;
	seed: string;
	clock: string;
	fleet?: string;
	'log-limit'?: string;
	tenancy: string;
	'token-ttl'?: string;
	'rate-limit'?: string;
};

function fail(msg: string): never {
	process.stderr.write(`simulator: ${msg}\n`);
	process.exit(2);
}
let secret = v.secret ?? process.env.SECSVC_SIM_SECRET ?? 'demo-secret';
if (v['secret-file'] !== undefined) {
	try {
		secret = readFileSync(v['secret-file'] ?? '', 'utf8').split(/\r?\n/)[0];
	} catch (e) {
		fail(`--secret-file: must be a readable file (${(e as Error).message})`);
	}
}
if (!secret) fail('the secret must not be empty');
let scenario: Scenario | undefined;
if (v.scenario) {
	try {
		scenario = JSON.parse(readFileSync(v.scenario ?? '', 'utf8')) as Scenario;
		checkScenario(scenario);
	} catch (e) {
		fail(`--scenario ${v.scenario}: ${(e as Error).message}`);
	}
}
if (v.clock !== 'real' && v.clock !== 'manual') fail('--clock: must be real or manual');
if (v.tenancy !== 'lenient' && v.tenancy !== 'strict') fail('--tenancy: must be lenient or strict');
const tokenTtl = v['token-ttl'] === undefined ? undefined : Number(v['token-ttl']);
if (tokenTtl !== undefined && (!Number.isInteger(tokenTtl) || tokenTtl < 1 || tokenTtl > 86400))
	fail('--token-ttl: must be an integer of 1-86400 seconds');
let fleet: { customers: number; sitesPerCustomer: number } | undefined;
if (v.fleet) {
	const m = /^(\d+)x(\d+)$/.exec(v.fleet ?? '');
	if (!m) fail('--fleet: must be CUSTOMERSxSITES, e.g. 100x10');
	fleet = { customers: Number(m[1]), sitesPerCustomer: Number(m[2]) };
}
let rateLimit: RateLimitSpec | undefined;
if (v['rate-limit'] !== undefined) {
	try {
		rateLimit = JSON.parse(v['rate-limit'] ?? '') as RateLimitSpec;
	} catch {
		fail('--rate-limit must be JSON, e.g. {"rps":60,"burst":10}');
	}
	const p = rateLimitProblems(rateLimit);
	if (p.length) fail(`--rate-limit: ${p.join('; ')}`);
}
const running = await startSimulator({
	port: Number(v.port),
	host: v.host,
	appId: v['app-id'] as string,
	secret,
	registeredHost: v['registered-host'],
	seed: Number(v.seed),
	clock: v.clock,
	scenario,
	fleet,
	...(v['log-limit'] ? { logLimit: Number(v['log-limit']) } : {}),
	tenancy: v.tenancy,
	...(tokenTtl ? { tokenTtl } : {}),
	...(rateLimit ? { rateLimit } : {}),
});
const ids = running.sim.firstIds();
process.stdout.write(`${running.url}\n`);
process.stderr.write(
	`simulator listening on ${running.url} (app_id ${v['app-id']}, seed ${v.seed}); first ids: ${JSON.stringify(ids)}; control API under ${running.url}/__sim/ (--help lists it)\n${siteNetworkText(running.sim.site(ids.site_id))}: ${running.url}/__sim/sites/${ids.site_id}/network\n`,
);
const stop = () => {
	void running.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

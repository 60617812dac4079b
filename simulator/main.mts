/**
 * CLI: npm run simulator -- --port 8443 --app-id demo-app --secret demo-secret [--scenario file] [--seed N]
 *      [--host 127.0.0.1] [--registered-host https://app.example.com] [--clock real|manual]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimulator, type Scenario } from './index.mts';

const { values } = parseArgs({
	options: {
		port: { type: 'string', default: '8443' },
		host: { type: 'string', default: '127.0.0.1' },
		'app-id': { type: 'string', default: 'demo-app' },
		secret: { type: 'string', default: 'demo-secret' },
		'registered-host': { type: 'string', default: 'https://app.example.com' },
		scenario: { type: 'string' },
		seed: { type: 'string', default: '1' },
		clock: { type: 'string', default: 'real' },
		/** CUSTOMERSxSITES, e.g. 100x10: a fleet on top of the seeded world (simulator/fleet.mts). */
		fleet: { type: 'string' },
		'log-limit': { type: 'string' },
	},
});

const scenario = values.scenario ? (JSON.parse(readFileSync(values.scenario, 'utf8')) as Scenario) : undefined;
if (values.clock !== 'real' && values.clock !== 'manual') throw new Error('--clock must be real or manual');
let fleet: { customers: number; sitesPerCustomer: number } | undefined;
if (values.fleet) {
	const m = /^(\d+)x(\d+)$/.exec(values.fleet);
	if (!m) throw new Error('--fleet must be CUSTOMERSxSITES, e.g. 100x10');
	fleet = { customers: Number(m[1]), sitesPerCustomer: Number(m[2]) };
}
const running = await startSimulator({
	port: Number(values.port),
	host: values.host,
	appId: values['app-id'] as string,
	secret: values.secret as string,
	registeredHost: values['registered-host'],
	seed: Number(values.seed),
	clock: values.clock,
	scenario,
	fleet,
	...(values['log-limit'] ? { logLimit: Number(values['log-limit']) } : {}),
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

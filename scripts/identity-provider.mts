/**
 * The local OpenID Connect provider (worker/src/identity/localProvider.mts) as a process, for
 * scripts/temporal-cluster.sh: `node --import tsx scripts/identity-provider.mts --port N --config FILE --key-file FILE`.
 * FILE is JSON `{ "people": {…}, "clients": […], "services": [{ "id", "secret", "permissions" }],
 * "serviceAudience": "…", "serviceTokenSeconds": 600 }`. Prints the issuer on stdout once it listens; SIGTERM stops it.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startLocalProvider, type LocalProviderOptions } from '../worker/src/identity/localProvider.mts';

const { values } = parseArgs({
	options: { port: { type: 'string' }, config: { type: 'string' }, 'key-file': { type: 'string' } },
});
if (!values.config) throw new Error('--config: is required (the provider JSON)');
const cfg = JSON.parse(readFileSync(values.config, 'utf8')) as LocalProviderOptions;
const p = await startLocalProvider({ ...cfg, port: Number(values.port ?? 0), keyFile: values['key-file'] });
console.log(p.issuer);
const stop = () => void p.close().then(() => process.exit(0));
process.on('SIGTERM', stop).on('SIGINT', stop);

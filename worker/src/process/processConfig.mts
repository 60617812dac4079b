import { readFileSync } from 'node:fs';
import { ConfigError } from './config.mts';

/**
 * Settings of the worker PROCESS (not of the runbooks): drain time on SIGTERM and the health listener.
 *
 *   SECSVC_SHUTDOWN_GRACE   shutdown.grace    how long running activities may finish after SIGTERM/SIGINT before the
 *                                             process ends anyway: `30s` (default), `1500ms`, `2m`, or plain seconds
 *   SECSVC_HEALTH_ADDRESS   health.address    `host:port` of the /healthz and /readyz listener (off when unset)
 *
 * The environment wins over the JSON file (SECSVC_CONFIG), as in config.mts. A malformed value is a ConfigError
 * naming the setting, so the worker exits at once instead of running with a surprise.
 */
export interface ProcessConfig {
	shutdownGraceMs: number;
	health?: { host: string; port: number };
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
const MAX_GRACE_MS = 3_600_000;

/** `30s`, `1500ms`, `2m`, `45` (seconds) → milliseconds; undefined when malformed. */
export function parseDuration(v: unknown): number | undefined {
	if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? Math.round(v * 1000) : undefined;
	if (typeof v !== 'string') return undefined;
	const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(v);
	if (!m) return undefined;
	const n = Number(m[1]);
	return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

/** `host:port`, `[v6]:port` or `:port` (all interfaces) → parts; undefined when malformed. */
export function parseListenAddress(v: string): { host: string; port: number } | undefined {
	const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]*)):(\d{1,5})$/.exec(v.trim());
	if (!m) return undefined;
	const port = Number(m[3]);
	if (port > 65535) return undefined;
	return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

export function loadProcessConfig(env: NodeJS.ProcessEnv = process.env, file = env.SECSVC_CONFIG): ProcessConfig {
	let j: { shutdown?: { grace?: unknown }; health?: { address?: unknown } } = {};
	if (file) {
		try {
			j = JSON.parse(readFileSync(file, 'utf8'));
		} catch (e) {
			throw new ConfigError([
				{ field: `config file ${file}`, rule: `must be readable JSON (${(e as Error).message})` },
			]);
		}
	}
	const issues: { field: string; rule: string }[] = [];
	const graceRaw = env.SECSVC_SHUTDOWN_GRACE ?? j.shutdown?.grace;
	let shutdownGraceMs = DEFAULT_SHUTDOWN_GRACE_MS;
	if (graceRaw !== undefined && graceRaw !== '') {
		const ms = parseDuration(graceRaw);
		if (ms === undefined || ms > MAX_GRACE_MS)
			issues.push({
				field: 'shutdown.grace (SECSVC_SHUTDOWN_GRACE)',
				rule: `must be a duration up to 1h like 30s, 1500ms, 2m or 45 (got ${JSON.stringify(graceRaw)})`,
			});
		else shutdownGraceMs = ms;
	}
	const addrRaw = env.SECSVC_HEALTH_ADDRESS ?? j.health?.address;
	let health: ProcessConfig['health'];
	if (addrRaw !== undefined && addrRaw !== '') {
		health = typeof addrRaw === 'string' ? parseListenAddress(addrRaw) : undefined;
		if (!health)
			issues.push({
				field: 'health.address (SECSVC_HEALTH_ADDRESS)',
				rule: `must be host:port like 127.0.0.1:9465 (got ${JSON.stringify(addrRaw)})`,
			});
	}
	if (issues.length) throw new ConfigError(issues);
	return { shutdownGraceMs, health };
}

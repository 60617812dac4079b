import { budgetSettingIssues, type BucketSettings } from '../../../api/rateBudget.ts';

/**
 * `api.rateLimit`: the request budget of the whole cluster (docs/rate-budget.md). The spec gives no limits (§8 "Request
 * rate limits: not shown"), so there is none unless configured. JSON (config file) or env (wins):
 *   rps            SECSVC_RATE_LIMIT_RPS            requests per second of the app, all workers together (> 0)
 *   burst          SECSVC_RATE_LIMIT_BURST          requests at once after a quiet spell (≥ 1; default 1)
 *   tenant.rps     SECSVC_TENANT_RATE_LIMIT_RPS     each tenant's requests per second (tenant mode; within the app's)
 *   tenant.burst   SECSVC_TENANT_RATE_LIMIT_BURST
 *   refreshSeconds SECSVC_RATE_LIMIT_REFRESH        how often the worker count and the cluster's pause are read (default 2)
 *   unknownWorkers SECSVC_RATE_LIMIT_UNKNOWN_WORKERS workers assumed while their number is unknown (default 8)
 * Bad values (0, negative, not numbers, burst below 1) refuse the start naming the setting.
 */
export interface RateLimitConfig extends BucketSettings {
	tenant?: BucketSettings;
	refreshSeconds: number;
	unknownWorkers: number;
}

type Issue = { field: string; rule: string };

/** The env value (a number in text) or the JSON value (a number): undefined when neither is given; a bad one is an issue. */
const numberReader =
	(env: Record<string, string | undefined>, issues: Issue[]) =>
	(envName: string, jsonField: string, v: unknown): number | undefined => {
		const e = env[envName];
		if (e !== undefined && e !== '') {
			const n = /^\s*-?\d+(\.\d+)?\s*$/.test(e) ? Number(e) : NaN;
			if (Number.isNaN(n))
				issues.push({
					field: `${jsonField} (${envName})`,
					rule: `must be a number (got ${JSON.stringify(e.slice(0, 40))})`,
				});
			return n;
		}
		if (v === undefined || v === null) return undefined;
		if (typeof v !== 'number' || !Number.isFinite(v)) {
			issues.push({
				field: `${jsonField} (${envName})`,
				rule: `must be a number (got ${JSON.stringify(v).slice(0, 40)})`,
			});
			return NaN;
		}
		return v;
	};

export function loadRateLimit(
	env: Record<string, string | undefined>,
	json: unknown,
): { config?: RateLimitConfig; issues: Issue[] } {
	const j = json === undefined || json === null ? {} : json;
	if (typeof j !== 'object' || Array.isArray(j))
		return { issues: [{ field: 'api.rateLimit', rule: 'must be an object { rps, burst }' }] };
	const o = j as Record<string, unknown>;
	const t = (o.tenant && typeof o.tenant === 'object' ? o.tenant : {}) as Record<string, unknown>;
	const issues: Issue[] = [];
	const num = numberReader(env, issues);
	const rps = num('SECSVC_RATE_LIMIT_RPS', 'api.rateLimit.rps', o.rps);
	const burst = num('SECSVC_RATE_LIMIT_BURST', 'api.rateLimit.burst', o.burst);
	const trps = num('SECSVC_TENANT_RATE_LIMIT_RPS', 'api.rateLimit.tenant.rps', t.rps);
	const tburst = num('SECSVC_TENANT_RATE_LIMIT_BURST', 'api.rateLimit.tenant.burst', t.burst);
	const refresh = num('SECSVC_RATE_LIMIT_REFRESH', 'api.rateLimit.refreshSeconds', o.refreshSeconds);
	const unknown = num('SECSVC_RATE_LIMIT_UNKNOWN_WORKERS', 'api.rateLimit.unknownWorkers', o.unknownWorkers);
	if (issues.length) return { issues };
	/** budgetSettingIssues names `x.rps` / `x.burst`: here the setting and its variable. */
	const named = (prefix: string, envPrefix: string) => (i: Issue) => {
		const k = i.field.endsWith('rps') ? 'rps' : 'burst';
		return { field: `${prefix}.${k} (${envPrefix}_${k.toUpperCase()})`, rule: i.rule };
	};
	if (rps === undefined) {
		if ([burst, trps, tburst].some((x) => x !== undefined))
			issues.push({
				field: 'api.rateLimit.rps (SECSVC_RATE_LIMIT_RPS)',
				rule: 'is required when any other rate-limit setting is given',
			});
		return { issues };
	}
	for (const i of budgetSettingIssues({ rps, burst }, 'x')) issues.push(named('api.rateLimit', 'SECSVC_RATE_LIMIT')(i));
	if (trps === undefined && tburst !== undefined)
		issues.push({
			field: 'api.rateLimit.tenant.rps (SECSVC_TENANT_RATE_LIMIT_RPS)',
			rule: 'is required with a tenant burst',
		});
	if (trps !== undefined)
		for (const i of budgetSettingIssues({ rps: trps, burst: tburst }, 'x'))
			issues.push(named('api.rateLimit.tenant', 'SECSVC_TENANT_RATE_LIMIT')(i));
	if (refresh !== undefined && !(refresh >= 0.2 && refresh <= 60))
		issues.push({
			field: 'api.rateLimit.refreshSeconds (SECSVC_RATE_LIMIT_REFRESH)',
			rule: 'must be a number of seconds from 0.2 to 60',
		});
	if (unknown !== undefined && !(Number.isInteger(unknown) && unknown >= 1 && unknown <= 1000))
		issues.push({
			field: 'api.rateLimit.unknownWorkers (SECSVC_RATE_LIMIT_UNKNOWN_WORKERS)',
			rule: 'must be an integer from 1 to 1000',
		});
	if (issues.length) return { issues };
	return {
		issues,
		config: {
			rps,
			burst: burst ?? 1,
			...(trps !== undefined ? { tenant: { rps: trps, burst: tburst ?? 1 } } : {}),
			refreshSeconds: refresh ?? 2,
			unknownWorkers: unknown ?? 8,
		},
	};
}

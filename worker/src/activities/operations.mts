import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { catalog, getOperation } from '../../../api/catalog/index.ts';
import type { CatalogEntry } from '../../../api/catalog/types.ts';
import { isClientRefusal, type Client } from '../../../api/client.ts';
import { redactDeep, redactText } from '../../../api/redact.ts';
import { KeyedMutex } from './mutex.mts';
import { EXACT_SETTINGS, exactList, exactSet } from './exactWrites.mts';
import { filterOnceActivities } from './httpFilterOnce.mts';
import { claim, release } from '../../../workflows/coordinator/client.mts';
import { settingKey } from '../../../workflows/coordinator/coordination.mts';
import { parsePlan, PlanError } from '../../../api/runbook/plan.ts';
import { CHECK_INPUT_ACTIVITY, PARSE_PLAN_ACTIVITY } from '../../../workflows/pure/activityNames.mts';
import { checkInput } from './inputCheck.mts';

/**
 * Activities for every catalog operation, generated: activity name = operation id
 * (e.g. `applicationProtection.ipBlacklist.add`). The client holds the credentials; activity inputs and results
 * (which Temporal records in history) never carry a secret or a token.
 *
 * Error mapping:
 *  - ValidationError → ApplicationFailure.nonRetryable type 'ValidationError' (nothing was sent)
 *  - ApiError → nonRetryable type 'ApiError' unless its code is a rate-limit code → retryable 'RateLimited'
 *  - TransportError → retryable 'TransportError', except a write of an unsafe operation whose outcome is
 *    unknown (maybe applied) → nonRetryable 'OutcomeUnknown' (repeating it could duplicate the write)
 */

export type Activity = (params?: Record<string, unknown>) => Promise<unknown>;

export interface ActivityOptions {
	/**
	 * API codes that are retried (the service refused, nothing was applied, trying later may succeed):
	 * rate limited (42901), HTTP-filter busy (40901), internal error (50001). The spec lists no codes (§7);
	 * configurable (SECSVC_RETRYABLE_API_CODES).
	 */
	retryableApiCodes?: readonly number[];
	/**
	 * The worker's Temporal client: HTTP-filter create/edit take a lease at the site's coordinator
	 * (workflows/coordinator/siteCoordinator.mts) so they never overlap across worker processes and hosts (§4.3.1/§7).
	 * Without it (activities used outside a worker) they are serialized in this process only.
	 */
	coordination?: () => TemporalClient;
	/** Values for secret-bearing fields of the authorization operations, taken from the worker's configuration. */
	authInputs?: { appId?: string; secret?: string; refreshToken?: string; authCode?: string };
}

/** Fields that must never travel through Temporal (inputs are recorded in history). */
const SECRET_FIELDS = new Set(['secret', 'refresh_token', 'code', 'access_token']);
const FROM_CONFIG: Record<string, keyof NonNullable<ActivityOptions['authInputs']>> = {
	app_id: 'appId',
	secret: 'secret',
	refresh_token: 'refreshToken',
	code: 'authCode',
};

const httpFilterMutex = new KeyedMutex();

/**
 * Operations this module makes idempotent, whatever the catalog says: IP-list add / remove and the settings of
 * EXACT_SETTINGS read first (exactWrites.mts), so a retry after an unknown outcome finds its own write.
 */
const IDEMPOTENT_HERE = (op: CatalogEntry) =>
	op.id in EXACT_SETTINGS ||
	(op.resource === 'applicationProtection' &&
		(op.group === 'ipBlacklist' || op.group === 'ipWhitelist') &&
		(op.action === 'add' || op.action === 'remove'));

export const DEFAULT_RETRYABLE_API_CODES: readonly number[] = [42901, 40901, 50001];

export function createActivities(client: Client, opts: ActivityOptions = {}): Record<string, Activity> {
	const rateCodes = new Set(opts.retryableApiCodes ?? DEFAULT_RETRYABLE_API_CODES);
	const acts: Record<string, Activity> = {};
	for (const op of catalog) {
		if (op.encoding === 'redirect') {
			acts[op.id] = async (params = {}) =>
				wrap(op, rateCodes, async () => redactDeep(await client.connect(withAuthInputs(op, params, opts))));
			continue;
		}
		acts[op.id] = async (params = {}) =>
			wrap(op, rateCodes, () => run(client, op, withAuthInputs(op, params, opts), opts.coordination));
	}
	// Plans are parsed here, in the worker, so zod stays out of the workflow bundle (workflows/input/parsePlan.mts).
	acts[PARSE_PLAN_ACTIVITY] = async (plan?: unknown) => {
		try {
			return parsePlan(plan) as unknown as Record<string, unknown>;
		} catch (e) {
			// bounded (first 10 issues + a count): a huge invalid plan must fail the run, not exceed gRPC's message limit
			if (e instanceof PlanError)
				throw ApplicationFailure.nonRetryable(e.message, 'ValidationError', {
					issues: e.issues,
					moreIssues: e.moreIssues,
				});
			throw e;
		}
	};
	// Inputs of workflows started directly, checked by the CLI's own rules (workflows/input/checkInWorker.mts).
	acts[CHECK_INPUT_ACTIVITY] = async (kind?: unknown, input?: unknown) => checkInput(client, kind, input);
	// The durable call's HTTP-filter create, made idempotent (httpFilterOnce.mts), serialized like every create/edit.
	const serialized = <T,>(site: string, dp: string, fn: () => Promise<T>) =>
		serializedFilterWrite(opts.coordination, site, dp, fn);
	Object.assign(
		acts,
		filterOnceActivities(client, serialized, (op, e) => toFailure(op, e, rateCodes)),
	);
	return acts;
}

async function run(
	client: Client,
	op: CatalogEntry,
	params: Record<string, unknown>,
	coordination?: () => TemporalClient,
): Promise<unknown> {
	const g = op.group;
	// Writes answer with what they changed (exactWrites.mts): IP-list add / remove, and the settings playbooks write.
	if (IDEMPOTENT_HERE(op))
		return op.id in EXACT_SETTINGS ? exactSet(client, op, params) : exactList(client, op, params);
	if (
		op.resource === 'applicationProtection' &&
		g === 'httpFilter' &&
		(op.action === 'create' || op.action === 'update')
	) {
		// §4.3.1 / §7: no concurrent create/edit of a domain-port's filters: one at a time inside this process, and a
		// lease at the site's coordinator across processes and hosts.
		const valid = client.validate(op.id, params); // bad input fails before any lease is taken
		return serializedFilterWrite(coordination, String(valid.site_id), String(valid.domain_port_id), () =>
			client.call(op.id, params),
		);
	}
	const r = await client.call(op.id, params);
	return op.resource === 'authorization' ? redactDeep(r) : r;
}

/** The filter lease's life, renewed every other heartbeat while its write runs: it ends with its attempt. */
const FILTER_LEASE_TTL_S = 20;
/** Well within the durable call's 10 s heartbeat timeout (workflows/durableCall/durableCall.mts). */
const FILTER_HEARTBEAT_MS = 2_500;

/**
 * One HTTP-filter create/edit per domain-port at a time: the coordinator's lease across processes and hosts (each
 * activity its own owner, so it serializes one process's activities too), else this process's mutex.
 * The lease is asked for without waiting, again and again with a jittered backoff, rather than by a claim that waits
 * in the coordinator: a waiting claim outlives a SIGKILLed caller and is granted to nobody alive. The lease lives
 * FILTER_LEASE_TTL_S and is renewed while the write runs, and the activity heartbeats meanwhile (waiting included):
 * a killed attempt's lease lapses within 20 s (it held the domain-port's other writes 120 s) and, with the
 * workflow's heartbeat timeout, its retry starts within 10 s and re-takes its own lease at once.
 */
async function serializedFilterWrite<T>(
	coordination: (() => TemporalClient) | undefined,
	site: string,
	dp: string,
	fn: () => Promise<T>,
): Promise<T> {
	const info = activityInfo();
	if (!coordination || !info?.workflowExecution) return httpFilterMutex.run(`${site}/${dp}`, fn);
	const temporal = coordination();
	const owner = `${info.workflowExecution.workflowId}#${info.activityId}`; // the same across the activity's retries
	const keys = [settingKey.httpFilterWrite(dp)];
	const ask = async () => {
		try {
			const r = await claim(
				temporal,
				{
					site_id: site,
					owner,
					keys,
					mode: 'lease',
					ttlSeconds: FILTER_LEASE_TTL_S,
					reason: 'HTTP-filter create/edit (§4.3.1: never concurrent)',
				},
				info.taskQueue,
			);
			return r.granted.includes(keys[0]);
		} catch (e) {
			// Temporal allows 10 in-flight Updates per workflow: many creates asking at once are asked to come back
			if (!/in-flight updates/i.test(String((e as Error)?.message))) throw e;
			return false;
		}
	};
	let held = false;
	let renewing: Promise<unknown> = Promise.resolve();
	// The same owner's claim renews its lease (a new `until`); a failed renewal is tried again at the next beat.
	let beats = 0;
	const beat = setInterval(() => {
		heartbeatActivity();
		if (held && ++beats % 2 === 0) renewing = ask().catch(() => undefined);
	}, FILTER_HEARTBEAT_MS);
	try {
		for (let attempt = 0; !(held = await ask()); attempt++)
			await new Promise((r) =>
				setTimeout(r, Math.min(2000, 200 * 2 ** Math.min(attempt, 4)) * (0.5 + Math.random() / 2)),
			);
		return await fn();
	} finally {
		clearInterval(beat);
		await renewing; // a renewal landing after the release would take the lease again
		// lapses by itself FILTER_LEASE_TTL_S after the last renewal otherwise
		if (held) await release(temporal, site, owner, keys).catch(() => undefined);
	}
}

function heartbeatActivity(): void {
	try {
		Context.current().heartbeat();
	} catch {
		// not inside an activity (direct use)
	}
}

function activityInfo(): ReturnType<typeof Context.current>['info'] | undefined {
	try {
		return Context.current().info;
	} catch {
		return undefined; // not inside an activity (direct use): this process's mutex only
	}
}

/** Authorization operations take their secrets from the worker configuration, never from activity input. */
function withAuthInputs(
	op: CatalogEntry,
	params: Record<string, unknown>,
	opts: ActivityOptions,
): Record<string, unknown> {
	const p = { ...(params ?? {}) };
	const given = Object.keys(p).filter(
		(k) => SECRET_FIELDS.has(k) && p[k] !== undefined && p[k] !== null && p[k] !== '',
	);
	if (given.length) {
		throw ApplicationFailure.nonRetryable(
			`${op.id}: invalid input — ${given.map((k) => `${k}: must not be passed through Temporal (secrets never enter workflow history); the worker takes it from its configuration`).join('; ')}`,
			'ValidationError',
			{ opId: op.id, issues: given.map((field) => ({ field, rule: 'must not be passed through Temporal' })) },
		);
	}
	if (op.resource !== 'authorization') return p;
	for (const f of op.fields) {
		const src = FROM_CONFIG[f.name];
		if (src && p[f.name] === undefined && opts.authInputs?.[src] !== undefined) p[f.name] = opts.authInputs[src];
	}
	return p;
}

async function wrap(op: CatalogEntry, rateCodes: Set<number>, fn: () => Promise<unknown>): Promise<unknown> {
	try {
		return await fn();
	} catch (err) {
		throw toFailure(op, err, rateCodes);
	}
}

export function toFailure(
	op: CatalogEntry | string,
	err: unknown,
	rateCodes: Set<number> = new Set(DEFAULT_RETRYABLE_API_CODES),
): Error {
	const o = typeof op === 'string' ? getOperation(op) : op;
	if (err instanceof ApplicationFailure) return err;
	const e = (err ?? {}) as Error & {
		issues?: unknown;
		code?: number;
		msg?: string;
		kind?: string;
		status?: number;
		maybeApplied?: boolean;
		rateLimited?: boolean;
	};
	const message = redactText(e.message ?? String(err));
	switch (e.name) {
		case 'ValidationError':
			return ApplicationFailure.nonRetryable(message, 'ValidationError', { opId: o.id, issues: e.issues });
		case 'BlastRadiusError':
			// the blast-radius guard refused a block (nothing sent): a runbook skips the entry with this reason
			return ApplicationFailure.nonRetryable(message, 'BlastRadius', { opId: o.id, issues: e.issues });
		case 'ApiError':
			if (typeof e.code === 'number' && rateCodes.has(e.code))
				return ApplicationFailure.retryable(message, e.code === 42901 ? 'RateLimited' : 'ApiErrorRetryable', {
					opId: o.id,
					code: e.code,
				});
			return ApplicationFailure.nonRetryable(message, 'ApiError', {
				opId: o.id,
				code: e.code,
				msg: e.msg === undefined ? undefined : redactText(e.msg),
			});
		case 'TransportError': {
			const details = { opId: o.id, kind: e.kind, status: e.status, maybeApplied: e.maybeApplied };
			if (e.rateLimited) return ApplicationFailure.retryable(message, 'RateLimited', details);
			// a 4xx refusal (no such path, headers too large, …) gets the same answer every time
			if (e.kind === 'http' && typeof e.status === 'number' && isClientRefusal(e.status))
				return ApplicationFailure.nonRetryable(message, 'HttpRefused', details);
			if (o.safety === 'unsafe' && !IDEMPOTENT_HERE(o) && e.maybeApplied !== false)
				return ApplicationFailure.nonRetryable(
					`${message} (outcome unknown; not repeated automatically)`,
					'OutcomeUnknown',
					details,
				);
			return ApplicationFailure.retryable(message, 'TransportError', details);
		}
		default:
			return ApplicationFailure.retryable(message, e.name || 'Error', { opId: o.id });
	}
}

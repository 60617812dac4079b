import {
	ActivityFailure,
	ApplicationFailure,
	allHandlersFinished,
	condition,
	continueAsNew,
	patched,
	proxyActivities,
	setHandler,
	upsertMemo,
	workflowInfo,
} from '@temporalio/workflow';
import {
	installUpdate,
	removeUpdate,
	RENEW_ACTIVITY,
	RENEW_HEARTBEAT_TIMEOUT,
	RENEW_START_TO_CLOSE,
	sealed,
	sealedFor,
	tenantInputProblem,
	tokenUpdate,
	viewOf,
	viewQuery,
	withToken,
	type Sealed,
	type TenantState,
	type TokenGrant,
	type TokenRequest,
	type InstallRequest,
} from './shared.mts';
import type { createTenantActivities } from './activitiesRenew.mts';

/**
 * One tenant's token, owned for the whole cluster (entity workflow `tenant-<customer_id>`, docs/worker/tenants.md).
 *  - `token` (Update) hands out a valid access token; when the held one is due (renewAt) or the asker names the
 *    generation the service refused, it renews first. Renewals run one at a time (a lock inside the workflow), so a
 *    tenant's token is renewed once per expiry however many workers ask at once.
 *  - The renewal is a regular activity run by whichever tenant worker polls: its result (the rotated refresh token,
 *    sealed = encrypted by the payload codec) is in history when the server accepts its completion, before any
 *    worker can use the new token; the old refresh token is never sent again after that.
 *  - The service refusing the refresh token (rotated away, expired) marks the tenant `needs-reinstall`: the Update
 *    fails with that name, every later ask too, until `install` gives it a new token record. Never retried in a loop.
 *    Unless the renewal re-installed it at once from the kept connect parameters (SECSVC_TENANT_REINSTALL): the
 *    lock-out is counted and kept (`lastLockout`) and the new token record taken like a renewal's.
 *  - `install` replaces the token record and sites (first install = Update-with-start; a re-install clears
 *    needs-reinstall); `remove` ends the workflow; `view` answers without any secret. Memo `sites`/`kind` let workers
 *    map a site to its tenant from a visibility list.
 */
/**
 * A run continues as new after this many events. Short runs bound what every worker holds per cached tenant (the SDK
 * core keeps a state machine per command and per workflow task for the run's life, and each renewal adds a few) and
 * keep a replay short. Runs started before the patch keep their old length.
 */
const CONTINUE_AFTER_EVENTS = 300;
const CONTINUE_AFTER_EVENTS_BEFORE = 2_000;
const SHORT_RUNS_PATCH = 'tenant-short-runs';

const { [RENEW_ACTIVITY]: renew } = proxyActivities<ReturnType<typeof createTenantActivities>>({
	// A live attempt is never timed out beside its POST (its answer would be lost and the retry's old refresh token
	// refused): heartbeats say it is alive (activitiesRenew.mts). A retry after a refresh that reached the service gets the
	// service's refusal (the old token is gone): the tenant is then needs-reinstall, loudly; a retry after a request
	// that never left gets a token.
	startToCloseTimeout: RENEW_START_TO_CLOSE,
	heartbeatTimeout: RENEW_HEARTBEAT_TIMEOUT,
	retry: {
		initialInterval: '500 milliseconds',
		maximumInterval: '5 seconds',
		maximumAttempts: 5,
		nonRetryableErrorTypes: ['RefreshRejected', 'ApiError', 'ValidationError'],
	},
});

export async function tenant(input: Sealed<TenantState>): Promise<ReturnType<typeof viewOf>> {
	const { $sealed: _, ...start } = input;
	const state: TenantState = { ...start };
	const continueAfter = patched(SHORT_RUNS_PATCH) ? CONTINUE_AFTER_EVENTS : CONTINUE_AFTER_EVENTS_BEFORE;
	const run = tenantRun(state);
	setHandler(viewQuery, () => viewOf(state));
	setHandler(tokenUpdate, (req) => run.locked(() => token(run, req)), {
		validator: (req) => {
			// refused before it is accepted: the asks of a tenant that needs re-install write no history
			if (state.status !== 'ok') throw run.refused();
			if (
				!req ||
				typeof req !== 'object' ||
				(req.rejectedGeneration !== undefined && !Number.isInteger(req.rejectedGeneration))
			)
				fail('rejectedGeneration: must be an integer when given');
		},
	});
	setHandler(installUpdate, (req) => run.locked(async () => install(run, req)), {
		validator: (req) => {
			const p = tenantInputProblem({ sites: req?.sites, kind: req?.kind, protectedRanges: req?.protectedRanges });
			if (p) fail(p);
			if (req.kind === 'user' && (!req.refreshToken || !req.accessToken || !req.expiresIn))
				fail('token: a user tenant is installed with the token record of the authorization-code exchange');
			const c = req.connect;
			if (c !== undefined && (typeof c?.redirectUri !== 'string' || !['undefined', 'string'].includes(typeof c.xspe)))
				fail("connect: the install's redirectUri (text) and xspe (text, optional)");
		},
	});
	setHandler(removeUpdate, () =>
		run.locked(async () => {
			state.status = 'removed';
			delete state.accessToken;
			delete state.refreshToken;
			return viewOf(state);
		}),
	);
	await condition(
		() =>
			state.status === 'removed' ||
			workflowInfo().continueAsNewSuggested ||
			workflowInfo().historyLength > continueAfter,
	);
	await condition(() => !run.busy && allHandlersFinished());
	if (state.status === 'removed') return viewOf(state);
	return continueAsNew<typeof tenant>(sealed(state));
}

type TenantRun = ReturnType<typeof tenantRun>;

/** One run's state and the helpers its handlers share (state lives in the workflow function's scope, never the module's). */
function tenantRun(state: TenantState) {
	const run = {
		state,
		busy: false,
		// A mutex for the handlers: every waiting condition that holds is released in the same pass, so each waiter
		// checks again when it runs (Updates delivered together in one activation would otherwise all enter at once).
		locked: async <T,>(fn: () => Promise<T>): Promise<T> => {
			while (run.busy) await condition(() => !run.busy);
			run.busy = true;
			try {
				return await fn();
			} finally {
				run.busy = false;
			}
		},
		grant: (): TokenGrant =>
			sealedFor(state.customerId, {
				accessToken: state.accessToken as string,
				expiresAt: state.expiresAt as number,
				renewAt: state.renewAt as number,
				generation: state.generation,
				...(state.protectedRanges?.length ? { protectedRanges: state.protectedRanges } : {}),
			}),
		refused: () =>
			ApplicationFailure.nonRetryable(
				`tenant ${state.customerId} needs re-install: ${state.problem ?? 'no token'}`,
				'NeedsReinstall',
			),
		take: (accessToken: string, expiresIn: number, sentAt: number, refreshToken?: string) => {
			Object.assign(state, withToken(state, { accessToken, expiresIn, sentAt, refreshToken }));
		},
	};
	return run;
}

/** The `token` Update: the current token, renewed first when due (or when the asker's generation was rejected). */
async function token(run: TenantRun, req: TokenRequest): Promise<TokenGrant> {
	const { state } = run;
	if (state.status !== 'ok') throw run.refused();
	const due =
		!state.accessToken ||
		Date.now() >= (state.renewAt ?? 0) ||
		(req.rejectedGeneration !== undefined && req.rejectedGeneration >= state.generation);
	if (!due) return run.grant();
	if (state.kind === 'user' && !state.refreshToken) {
		state.status = 'needs-reinstall';
		state.problem = 'no refresh token: install the app for this customer again';
		throw run.refused();
	}
	try {
		const r = await renew(
			sealed({
				customerId: state.customerId,
				kind: state.kind,
				...(state.kind === 'user' ? { refreshToken: state.refreshToken, connect: state.connect } : {}),
			}),
		);
		if (r.reinstalled) lockedOut(state, r.reinstalled, true);
		run.take(r.accessToken, r.expiresIn, r.sentAt, r.refreshToken);
		state.lastRenewal = r.answeredAt;
		state.renewals++;
		return run.grant();
	} catch (e) {
		const cause = e instanceof ActivityFailure ? e.cause : undefined;
		if (cause instanceof ApplicationFailure && cause.type === 'RefreshRejected') {
			state.status = 'needs-reinstall';
			state.problem = cause.message;
			lockedOut(state, cause.message, false);
			upsertMemo({ status: state.status });
			throw run.refused();
		}
		throw ApplicationFailure.nonRetryable(
			`tenant ${state.customerId}: no token now (${cause instanceof Error ? cause.message : String(e)}); ask again`,
			'TokenUnavailable',
		);
	}
}

/** A refused refresh token, counted and kept for the view; `reinstalled`: a worker re-installed the tenant at once. */
function lockedOut(state: TenantState, problem: string, reinstalled: boolean) {
	state.lockouts = (state.lockouts ?? 0) + 1;
	if (reinstalled) state.autoReinstalls = (state.autoReinstalls ?? 0) + 1;
	state.lastLockout = { at: Date.now(), problem, reinstalled };
}

/** The `install` Update: a new token record and sites (a re-install clears needs-reinstall). */
function install(run: TenantRun, req: InstallRequest) {
	const { state } = run;
	state.kind = req.kind;
	state.sites = [...new Set(req.sites)];
	// only an install that names them changes them (and the memo): an entrance re-install keeps the operator's
	const ranges = req.protectedRanges === undefined ? undefined : [...new Set(req.protectedRanges)];
	if (ranges) state.protectedRanges = ranges;
	if (req.connect) state.connect = req.connect; // a code obtained elsewhere (no connect) keeps the kept ones
	state.status = 'ok';
	delete state.problem;
	// the same record as the start's (Update-with-start of a new tenant) is not taken twice
	if (req.accessToken && req.expiresIn && req.accessToken !== state.accessToken)
		run.take(req.accessToken, req.expiresIn, req.issuedAt ?? Date.now(), req.refreshToken);
	else if (req.kind === 'app') state.renewAt = 0;
	upsertMemo({
		sites: state.sites,
		kind: state.kind,
		status: state.status,
		...(ranges ? { protectedRanges: ranges.length ? ranges : undefined } : {}),
	});
	return viewOf(state);
}

function fail(rule: string): never {
	throw ApplicationFailure.nonRetryable(rule, 'ValidationError');
}

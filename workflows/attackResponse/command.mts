import { abortInputProblem, extendInputProblem } from '../../api/signalRules.ts';
import { parsePlan } from '../../api/runbook/plan.ts';
import { browserLogin, deviceLogin } from '../../worker/src/identity/login.mts';
import { loadIdentityConfig } from '../../worker/src/identity/config.mts';
import {
	abort,
	decide,
	gateOf,
	extendCooldown,
	formatRunbookList,
	formatTimeline,
	inspect,
	listRunbooks,
	startAttackResponse,
	timeline,
} from './client.mts';
import { readJson, text, UsageError, type Command, type CommandContext } from '../../worker/src/commands/args.mts';

/** `secsvc start | approve | reject | abort | extend | inspect | list | timeline`: one attack response. */

export const start: Command = async ({ o, conn, t, out, err }) => {
	const plan = readJson(o.plan, 'plan');
	const parsed = parsePlan(plan); // before a login is asked for
	// The starter's proof (separation of duties: they cannot approve it): SECSVC_ID_TOKEN or --login.
	const idToken = await proof(o, err);
	const h = await startAttackResponse(await conn(), t.taskQueue, plan, {
		dryRun: o['dry-run'] === true,
		parsed,
		...(idToken ? { idToken } : {}),
	});
	out({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
	if (o.wait) out(await h.result());
	return 0;
};

/**
 * The person's ID token: `SECSVC_ID_TOKEN`, or a login at the provider (`--login`, or by default when an identity
 * provider is configured and no `--by` is given) with `nonce` = the gate's: in a browser on this machine (loopback
 * redirect), or `--login device` (device code, for a provider that carries the nonce into the ID token);
 * undefined = compatibility mode (typed --by).
 */
async function proof(
	o: Record<string, string | boolean>,
	err: (s: string) => void,
	nonce?: () => Promise<string | undefined>,
): Promise<string | undefined> {
	const env = process.env.SECSVC_ID_TOKEN?.trim();
	if (env) return env;
	const idp = loadIdentityConfig();
	if (!(o.login !== undefined || (idp && nonce && typeof o.by !== 'string'))) return undefined;
	if (o.login !== undefined && o.login !== true && o.login !== 'browser' && o.login !== 'device')
		throw new UsageError('--login: must be browser (default) or device');
	if (!idp)
		throw new UsageError(
			'--login: needs the identity provider (SECSVC_OIDC_ISSUER, SECSVC_OIDC_AUDIENCE or SECSVC_OIDC_CLIENT_ID)',
		);
	const n = nonce ? await nonce() : undefined;
	const login = o.login === 'device' ? deviceLogin : browserLogin;
	return login({ issuer: idp.issuer, clientId: idp.clientId, nonce: n, tell: (line) => err(`${line}\n`) });
}

/** The nonce of the runbook's open gate, which a decision's ID token must carry. */
const gateNonce = (conn: CommandContext['conn'], id: string) => async () => {
	const gate = await gateOf(await conn(), id);
	if (!gate)
		throw new UsageError(`approval: the runbook ${id} is not waiting for a decision (no open gate to log in for)`);
	return gate.nonce;
};

/**
 * `id-token [SITE|ID]`: a login at the identity provider, the ID token printed on stdout for a client that cannot log
 * the person in itself (n8n: Runbook › Start's and Decide's ID Token). With SITE it is bound to that runbook's open
 * gate (a decision's proof); without, it is a starter's proof.
 */
export const idTokenCommand: Command = async ({ o, pos, conn, out, err, need }) => {
	const id = pos.length ? need(0, 'SITE|ID') : undefined;
	out(await proof({ ...o, login: o.login ?? true }, err, id ? gateNonce(conn, id) : undefined));
	return 0;
};

/** approve / reject: the `decide` Update (the decision comes back, or the refusal naming the rule). */
export const decideCommand: Command = async ({ cmd, o, conn, out, err, need }) => {
	const approved = cmd === 'approve' && o.reject !== true;
	const id = need(0, 'SITE|ID');
	const reason = text(o.reason, '--reason');
	const by = text(o.by, '--by');
	if (!approved && typeof o.reason !== 'string') throw new UsageError('--reason: is required to reject');
	const idToken = await proof(o, err, gateNonce(conn, id));
	if (!idToken && (typeof o.by !== 'string' || !o.by.trim()))
		throw new UsageError(
			"--by: is required (your identity, as listed in the plan's approval.approvers), or a proof: SECSVC_ID_TOKEN / --login",
		);
	out(
		await decide(await conn(), id, {
			approved,
			...(by ? { by } : {}),
			reason,
			via: 'cli',
			...(idToken ? { idToken } : {}),
		}),
	);
	return 0;
};

export const abortCommand: Command = async ({ o, conn, out, need }) => {
	const [id, by, reason] = [need(0, 'SITE|ID'), text(o.by, '--by'), text(o.reason, '--reason')];
	const problem = abortInputProblem({ by, reason }); // the runbook's rule: it would refuse the signal silently
	if (problem) throw new UsageError(`--${problem}`);
	await abort(await conn(), id, by, reason);
	out('abort sent');
	return 0;
};

export const extend: Command = async ({ o, conn, out, need }) => {
	const s = Number(o.seconds);
	const [id, by] = [need(0, 'SITE|ID'), text(o.by, '--by')];
	const problem = extendInputProblem({ seconds: s, by }); // the runbook's rule (api/signalRules.ts)
	if (problem) throw new UsageError(`--${problem}`);
	await extendCooldown(await conn(), id, s, by);
	out(`cooldown extended by ${s}s`);
	return 0;
};

export const inspectCommand: Command = async ({ conn, out, need }) => {
	out(await inspect(await conn(), need(0, 'SITE|ID')));
	return 0;
};

export const list: Command = async ({ o, conn, out }) => {
	for (const k of ['site', 'phase'] as const) if (o[k] === true) throw new UsageError(`--${k}: a value is required`);
	const rows = await listRunbooks(await conn(), {
		site: text(o.site, '--site'),
		phase: text(o.phase, '--phase'),
		running: o.running === true,
	});
	out(o.json ? rows : formatRunbookList(rows));
	return 0;
};

export const timelineCommand: Command = async ({ conn, out, need }) => {
	out(formatTimeline(await timeline(await conn(), need(0, 'SITE|ID'))));
	return 0;
};

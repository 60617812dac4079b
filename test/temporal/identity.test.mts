/**
 * Verified approvals (docs/approvals.md) against a REAL OpenID Connect provider on loopback (the certified
 * `oidc-provider` package, test/helpers/oidcProvider.mts), a real Temporal dev server, the worker and the simulator:
 * a valid approver's decision (through `secsvc approve` with SECSVC_ID_TOKEN) is accepted and recorded with its
 * verified identity in the result, the audit and the report; refused, changing nothing: another key's signature,
 * another issuer, another audience, an expired token, a person outside the operator's approver group, the starter
 * approving their own runbook, no proof, a proof bound to another runbook's gate (replay); refused at start: a plan
 * that widens the approvers, a runbook without the starter's proof, a plan only its starter could approve. No token
 * is in the history in plain text (the decision travels sealed by the payload codec).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Client } from '@temporalio/client';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { dataConverterFor, parseKeys } from '../../worker/src/temporal/codec.mts';
import { startWorker } from '../../worker/src/process/worker.mts';
import { run } from '../../worker/src/commands/cli.mts';
import { runbookReportModel } from '../../api/report/model.ts';
import {
	ATTACK_SOURCES,
	env,
	useDevServer,
	plan,
	startSim,
	uniqueQueue,
	waitFor,
	workerConfig,
	type Ids,
} from './helpers.mts';
import { startProvider, type TestProvider } from '../helpers/oidcProvider.mts';

const PEOPLE = {
	alice: { email: 'alice@soc.example', groups: ['soc-oncall'] },
	bob: { email: 'bob@soc.example', groups: ['soc-oncall', 'staff'] },
	mallory: { email: 'mallory@soc.example', groups: ['interns'] },
};
const KEYS = `test:${randomBytes(32).toString('base64')}`;

let idp: TestProvider;
let otherIdp: TestProvider;
let client: Client;
useDevServer({
	start: async () => {
		process.env.SECSVC_PAYLOAD_KEYS = KEYS;
		[idp, otherIdp] = await Promise.all([startProvider(PEOPLE), startProvider(PEOPLE)]);
		client = new Client({
			connection: env.connection,
			namespace: 'default',
			dataConverter: dataConverterFor(parseKeys(KEYS)),
		});
	},
	stop: async () => {
		delete process.env.SECSVC_PAYLOAD_KEYS;
		await Promise.all([idp?.close(), otherIdp?.close()]);
	},
});

const refused = (p: Promise<unknown>, re: RegExp) =>
	assert.rejects(p, (e: Error) => (assert.match(e.message, re), true));
let n = 0;
const wid = (site: string) => `attack-response-${site}-identity-${process.pid}-${++n}`;
const small = (ids: Ids, approvers: string[]) =>
	plan(ids, {
		cooldownSeconds: 1,
		ipAuth: undefined,
		switches: [],
		blacklist: { enabled: false },
		detection: { rapidMode: true, thresholds: [] },
		approval: { required: true, timeoutSeconds: 600, approvers },
	});
const failure = async (h: { result(): Promise<unknown> }) => {
	const e = await h.result().then(
		() => undefined,
		(x: Error & { cause?: Error }) => x,
	);
	assert.ok(e, 'the run must fail');
	return String(e.cause?.message ?? e.message);
};
/** The whole history as text, read WITHOUT the codec: what anyone with read access to the namespace sees. */
const rawHistory = async (id: string) =>
	JSON.stringify(bytesAsText(await env.client.workflow.getHandle(id).fetchHistory()));
/** Payload bytes as text (JSON.stringify would turn a Buffer into a list of numbers before any replacer sees it). */
const bytesAsText = (v: unknown): unknown =>
	v instanceof Uint8Array
		? Buffer.from(v).toString('latin1')
		: Array.isArray(v)
			? v.map(bytesAsText)
			: v && typeof v === 'object'
				? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, bytesAsText(x)]))
				: v;

test(
	"verified approvals: the operator's policy, proven identities, bound to one gate; refusals name the rule and change nothing",
	{ timeout: 110_000 },
	async () => {
		const s = await startSim(41);
		const ids: Ids = s.sim.firstIds();
		const queue = uniqueQueue('identity');
		// The worker's policy for this customer (a tenant entry): group soc-oncall. Its default would let nobody approve.
		const identity = {
			issuer: idp.issuer,
			audience: ['secsvc', 'secsvc-cli'],
			clientId: 'secsvc-cli',
			identityClaim: 'email',
			groupsClaim: 'groups',
			clockSkewSeconds: 0,
			jwksCacheSeconds: 600,
			approverGroups: ['nobody'],
			approvers: [],
			tenants: { [ids.customer_id]: { approverGroups: ['soc-oncall'], approvers: [] } },
		};
		const worker = await startWorker(
			{ ...workerConfig(env, s.url, queue), identity },
			{ connection: env.nativeConnection },
		);
		const writes = () =>
			s.sim.requests().filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));
		const tokens: string[] = [];
		const login = async (who: string, o: { nonce?: string; clientId?: string; from?: TestProvider } = {}) => {
			const t = await (o.from ?? idp).login(who, o);
			tokens.push(t);
			return t;
		};
		try {
			// --- refused at start: a plan that widens the approvers, no starter's proof, a plan only its starter could approve
			const aliceStart = await login('alice');
			const widen = await startAttackResponse(client, queue, small(ids, ['group:everyone']), {
				workflowId: wid(ids.site_id),
				idToken: aliceStart,
			});
			assert.match(
				await failure(widen),
				/approval\.approvers\.0: group:everyone is not an approver group of this worker \(soc-oncall; tenant .* policy\): a plan may only narrow/,
			);
			const anonymous = await startAttackResponse(client, queue, small(ids, []), { workflowId: wid(ids.site_id) });
			assert.match(
				await failure(anonymous),
				/startedBy: a runbook that requires approval must be started with the starter's ID token/,
			);
			const onlyMe = await startAttackResponse(client, queue, small(ids, ['alice@soc.example']), {
				workflowId: wid(ids.site_id),
				idToken: aliceStart,
			});
			assert.match(
				await failure(onlyMe),
				/approval\.approvers: only alice@soc\.example, who starts this runbook, could approve it \(separation of duties\)/,
			);

			// --- runbook A, started by alice (proven), waiting at its gate
			const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const a = await startAttackResponse(client, queue, small(ids, ['group:soc-oncall']), {
				workflowId: wid(ids.site_id),
				idToken: aliceStart,
			});
			const gate = await waitFor('gate A', async () => {
				const st = await a.query(stateQuery);
				return st.phase === 'awaiting-approval' ? st : undefined;
			});
			assert.equal(gate.startedBy?.name, 'alice@soc.example');
			assert.equal(gate.startedBy?.verified, 'oidc');
			const nonceA = String(gate.gate?.nonce);
			assert.match(nonceA, /^[0-9a-f-]{36}$/);
			const dec = (idToken: string) => decide(client, a.workflowId, { approved: true, via: 'cli', idToken });

			const bobA = await login('bob', { nonce: nonceA });
			const forged = await new SignJWT(decodeJwt(bobA))
				.setProtectedHeader({ alg: 'RS256', kid: decodeProtectedHeader(bobA).kid })
				.sign((await generateKeyPair('RS256')).privateKey);
			await refused(dec(forged), /^proof: the signature does not verify against the provider's published keys/);
			await refused(
				dec(await login('bob', { nonce: nonceA, from: otherIdp })),
				new RegExp(`^proof: issuer ${otherIdp.issuer} is not the configured identity provider ${idp.issuer}`),
			);
			await refused(
				dec(await login('bob', { nonce: nonceA, clientId: 'other-app' })),
				/^proof: audience "other-app" is not this worker's \(secsvc, secsvc-cli\)/,
			);
			idp.ttl.idToken = 1;
			const shortLived = await login('bob', { nonce: nonceA });
			idp.ttl.idToken = 600;
			await new Promise((r) => setTimeout(r, 2200));
			await refused(dec(shortLived), /^proof: the ID token expired/);
			await refused(
				dec(await login('mallory', { nonce: nonceA })),
				/^approver: mallory@soc\.example is in none of the operator's approver groups \(soc-oncall; tenant .* policy\)/,
			);
			await refused(
				dec(await login('alice', { nonce: nonceA })),
				/^approver: alice@soc\.example started this runbook and cannot approve it \(separation of duties\)/,
			);
			await refused(
				dec(await login('bob', { nonce: 'a-nonce-of-another-gate' })),
				/^proof: the ID token is bound to another runbook or gate/,
			);
			await refused(
				decide(client, a.workflowId, { approved: true, by: 'bob@soc.example', via: 'cli' }),
				/^proof: an ID token from the identity provider is required \(this worker refuses unverified decisions\)/,
			);
			await refused(
				decide(env.client, a.workflowId, { approved: true, via: 'cli', idToken: bobA }),
				/^proof: must travel in a sealed request/,
			);
			let st = await a.query(stateQuery);
			assert.equal(st.phase, 'awaiting-approval', 'still waiting');
			assert.equal(st.approval, undefined);
			assert.deepEqual(writes(), [], 'nothing written');

			// --- bob approves through the CLI (SECSVC_ID_TOKEN): accepted with his verified identity
			const outs: string[] = [];
			Object.assign(process.env, {
				TEMPORAL_ADDRESS: env.address,
				TEMPORAL_NAMESPACE: 'default',
				TEMPORAL_TASK_QUEUE: queue,
				SECSVC_ID_TOKEN: bobA,
			});
			let code: number;
			try {
				code = await run(['approve', a.workflowId, '--reason', 'confirmed on the graphs'], {
					out: (x) => void outs.push(x),
					err: (x) => void outs.push(x),
				});
			} finally {
				delete process.env.SECSVC_ID_TOKEN;
			}
			assert.equal(code, 0, outs.join(''));
			const d = JSON.parse(outs.join('')) as {
				accepted: boolean;
				by: string;
				identity: Record<string, unknown>;
				at: string;
			};
			assert.deepEqual(
				[d.accepted, d.by, d.identity.verified, d.identity.subject, d.identity.issuer, d.identity.claim],
				[true, 'bob@soc.example', 'oidc', 'bob', idp.issuer, 'email'],
			);
			assert.equal(d.identity.tokenHash && String(d.identity.tokenHash).length, 16);
			await refused(dec(await login('bob', { nonce: nonceA })), /^approval: already decided/);

			await waitFor('mitigating', async () => (await a.query(stateQuery)).phase === 'waiting');
			s.sim.stopAttack(attack.id);
			const r = (await a.result()) as AttackResponseResult;
			assert.equal(r.outcome, 'reverted');
			assert.deepEqual(
				[r.approval?.by, r.approval?.identity?.verified, r.approval?.identity?.subject],
				['bob@soc.example', 'oidc', 'bob'],
			);
			const entry = r.audit.find((e) => e.what === 'approve');
			assert.equal(
				entry?.result,
				`by bob@soc.example via cli at ${d.at} (verified: oidc ${idp.issuer} email, sub bob)`,
			);
			assert.match(
				String(runbookReportModel(r, new Date().toISOString()).approval?.by),
				/bob@soc\.example .*verified: oidc/,
			);
			// issue 40: the verified person refused is in the audit, with the rule.
			const refusedEntries = r.audit.filter((e) => /mallory/.test(JSON.stringify(e)));
			assert.deepEqual(
				refusedEntries.map((e) => e.what),
				['decide refused (approve by mallory@soc.example)'],
				JSON.stringify(refusedEntries),
			);
			assert.match(
				String(refusedEntries[0]?.result),
				/^refused: approver: mallory@soc\.example is in none of the operator's approver groups/,
			);

			// --- runbook B on the same site: bob's proof for A's gate is refused here (replay), a fresh one is taken
			const b = await startAttackResponse(client, queue, small(ids, []), {
				workflowId: wid(ids.site_id),
				idToken: aliceStart,
			});
			st = await waitFor('gate B', async () => {
				const x = await b.query(stateQuery);
				return x.phase === 'awaiting-approval' ? x : undefined;
			});
			assert.notEqual(st.gate?.nonce, nonceA);
			await refused(
				decide(client, b.workflowId, { approved: true, via: 'cli', idToken: bobA }),
				/^proof: the ID token is bound to another runbook or gate/,
			);
			// alice rejects through `secsvc reject` with a browser login (the CLI's default with a provider configured): the
			// CLI prints the provider's login address, "alice" logs in, the provider redirects to the CLI's loopback listener,
			// the CLI exchanges the code (PKCE) for her ID token carrying B's gate nonce.
			const cliOut: string[] = [];
			let confirming: Promise<void> | undefined;
			Object.assign(process.env, { SECSVC_OIDC_ISSUER: idp.issuer, SECSVC_OIDC_AUDIENCE: 'secsvc-cli' });
			try {
				code = await run(['reject', b.workflowId, '--reason', 'no attack'], {
					out: (x) => void cliOut.push(x),
					err: (x) => {
						const url = /^Open (\S+) to log in/.exec(x)?.[1];
						if (url) confirming = idp.browse(url, 'alice');
						else cliOut.push(x);
					},
				});
			} finally {
				delete process.env.SECSVC_OIDC_ISSUER;
				delete process.env.SECSVC_OIDC_AUDIENCE;
			}
			await confirming;
			assert.equal(code, 0, cliOut.join(''));
			const rej = JSON.parse(cliOut.join('')) as { decision: string; by: string; identity: { verified: string } };
			assert.deepEqual(
				[rej.decision, rej.by, rej.identity.verified],
				['rejected', 'alice@soc.example', 'oidc'],
				'the starter may reject (it changes nothing)',
			);
			assert.equal(((await b.result()) as AttackResponseResult).outcome, 'rejected');

			// --- no token in the history in plain text: the decisions and the starter's proof travel sealed
			for (const id of [a.workflowId, b.workflowId, widen.workflowId]) {
				const h = await rawHistory(id);
				assert.ok(h.includes('binary/encrypted'), `${id}: sealed payloads in the history`);
				assert.ok(
					h.includes(ids.site_id) && h.includes('soc-oncall'),
					`${id}: the scan reads the history's payloads as text`,
				);
				for (const t of tokens)
					assert.ok(!h.includes(t.split('.')[2]), `${id}: an ID token's signature is in the history in plain text`);
			}
		} finally {
			await worker.shutdown();
			await s.close();
		}
	},
);

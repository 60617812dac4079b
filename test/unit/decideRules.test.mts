/**
 * The decision rules (api/decideRules.ts) beside the end-to-end test (test/temporal/identity.test.mts): input rules
 * per mode, the operator's policy by groups or by people, the plan's narrowing with `group:NAME`, separation of
 * duties (approve refused, reject allowed), the start-time rules of a plan's approvers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
	decideInputProblem,
	deciderProblem,
	planApproversProblem,
	type ApproverPolicy,
	type VerifiedIdentity,
} from '../../api/decideRules.ts';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
const oidc = (over: Partial<ApproverPolicy> = {}): ApproverPolicy => ({
	mode: 'oidc',
	issuer: 'https://idp',
	groups: ['soc'],
	identities: [],
	source: 'worker',
	...over,
});
const compat: ApproverPolicy = { mode: 'unverified', groups: [], identities: [], source: 'compatibility mode' };
const person = (name: string, groups: string[] = [], sub = name): VerifiedIdentity => ({
	verified: 'oidc',
	name,
	subject: sub,
	issuer: 'https://idp',
	groups,
});

test('input rules: a proof only sealed and only where a provider verifies it; none required without one', () => {
	assert.equal(decideInputProblem({ approved: true, by: 'alice' }), undefined);
	assert.match(
		String(decideInputProblem({ approved: true, by: 'alice' }, 'oidc')),
		/^proof: an ID token .* is required/,
	);
	assert.match(
		String(decideInputProblem({ approved: true, idToken: JWT }, 'oidc')),
		/^proof: must travel in a sealed request/,
	);
	assert.equal(decideInputProblem({ $sealed: 1, approved: true, idToken: JWT }, 'oidc'), undefined);
	assert.match(
		String(decideInputProblem({ $sealed: 1, approved: true, idToken: JWT })),
		/^proof: this worker has no identity provider/,
	);
	assert.match(
		String(decideInputProblem({ $sealed: 1, approved: true, idToken: 'not a jwt' }, 'oidc')),
		/^proof: must be an ID token/,
	);
	assert.match(
		String(decideInputProblem({ $sealed: 1, approved: true, idToken: 'a.b.' + 'c'.repeat(20000) }, 'oidc')),
		/^proof: must be an ID token/,
	);
	assert.match(
		String(decideInputProblem({ $sealed: 1, approved: false, idToken: JWT }, 'oidc')),
		/^reason: is required to reject/,
	);
});

test('who may decide: operator groups or people, the plan narrows, the starter may reject but not approve', () => {
	const alice = person('alice@x', ['soc']);
	assert.equal(deciderProblem(alice, true, oidc(), []), undefined);
	assert.match(
		String(deciderProblem(person('eve@x', ['staff']), true, oidc(), [])),
		/^approver: eve@x is in none of the operator's approver groups \(soc; worker policy\)/,
	);
	assert.equal(deciderProblem(person('lead@x'), true, oidc({ identities: ['lead@x'] }), []), undefined);
	assert.equal(deciderProblem(alice, true, oidc(), ['group:soc']), undefined);
	assert.match(String(deciderProblem(alice, true, oidc(), ['bob@x'])), /^by: alice@x is not in approval\.approvers/);
	assert.match(
		String(deciderProblem({ verified: 'unverified', name: 'alice@x' }, true, oidc(), [])),
		/^proof: this worker refuses unverified decisions/,
	);
	const starter = person('Alice@X', ['soc'], 'alice@x');
	assert.match(String(deciderProblem(alice, true, oidc(), [], starter)), /separation of duties/);
	assert.equal(
		deciderProblem(alice, false, oidc(), [], starter),
		undefined,
		'rejecting changes nothing: open to the starter',
	);
	assert.equal(deciderProblem(alice, true, oidc(), [], { verified: 'workflow', name: 'attack-watch-1' }), undefined);
	// compatibility mode: the typed name against the plan's list, as before
	assert.equal(deciderProblem({ verified: 'unverified', name: 'bob' }, true, compat, ['bob']), undefined);
	assert.match(
		String(deciderProblem({ verified: 'unverified', name: 'eve' }, true, compat, ['bob'])),
		/^by: eve is not in approval\.approvers/,
	);
});

test("at start: a plan only narrows the operator's approvers and leaves somebody able to approve", () => {
	assert.equal(planApproversProblem(['group:soc', 'bob@x'], true, oidc()), undefined);
	assert.match(
		String(planApproversProblem(['group:all'], true, oidc())),
		/^approval\.approvers\.0: group:all is not an approver group of this worker \(soc; worker policy\)/,
	);
	assert.match(
		String(planApproversProblem(['eve@x'], true, oidc({ groups: [], identities: ['lead@x'] }))),
		/^approval\.approvers\.0: eve@x is not an approver of this worker/,
	);
	assert.match(
		String(planApproversProblem([], true, oidc({ groups: [] }))),
		/^approval: no approver policy can approve/,
	);
	assert.equal(planApproversProblem([], false, oidc({ groups: [] })), undefined, 'no gate: nothing to approve');
	assert.match(
		String(planApproversProblem(['alice@x'], true, oidc(), person('alice@x'))),
		/^approval\.approvers: only alice@x, who starts this runbook, could approve it/,
	);
	assert.equal(
		planApproversProblem(['group:all'], true, compat),
		undefined,
		'compatibility mode: the plan decides, as before',
	);
});

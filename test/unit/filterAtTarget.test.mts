/**
 * Issue 43 item 1: an HTTP-filter edit is checked against the policy before it is sent (again): `filterAtTarget`
 * (api/httpFilterMatch.ts) says whether a listed policy already is what the edit would make it — every field the edit
 * sets, in the listing's shape (§4.3.1: url, action list, action_annex, other_iprange as start/end pairs).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterAtTarget } from '../../api/httpFilterMatch.ts';

const edit = {
	p_name: 'login',
	host: 'a.example.com',
	uri: '/login',
	action: 'URL_REDIRECTION',
	p_desc: 'bots',
	methods: ['POST', 'GET'],
	other_iprange: ['203.0.113.1', '203.0.113.8-203.0.113.9'],
	redirect_host: 'b.example.com',
	redirect_url: '/x',
	rp_code: 302,
	scheme: 'https',
};
const listed = {
	p_flag_id: '7',
	p_name: 'login',
	p_desc: 'bots',
	url: 'a.example.com/login',
	action: ['URL_REDIRECTION'],
	action_annex: { http_code: 302, page: '', url: 'https://b.example.com/x' },
	methods: ['GET', 'POST'],
	other_iprange: [
		{ start_ip: '203.0.113.1', end_ip: '203.0.113.1' },
		{ start_ip: '203.0.113.8', end_ip: '203.0.113.9' },
	],
};

test('a policy that already is what the edit makes it is at target (order and notation aside)', () => {
	assert.equal(filterAtTarget(listed, edit), true);
});

test('any field the edit changes makes it not at target: the edit is sent', () => {
	const differs: [string, Record<string, unknown>][] = [
		['p_name', { p_name: 'other' }],
		['uri', { uri: '/admin' }],
		['action', { action: 'BLOCK_HTTP' }],
		['p_desc', { p_desc: '' }],
		['methods', { methods: ['GET'] }],
		['other_iprange', { other_iprange: ['203.0.113.1'] }],
		['redirect_url', { redirect_url: '/y' }],
		['rp_code', { rp_code: 301 }],
		['scheme', { scheme: 'http' }],
	];
	for (const [field, change] of differs) assert.equal(filterAtTarget(listed, { ...edit, ...change }), false, field);
});

test('a listing without a field the edit sets counts as different (an edit that cannot be checked is sent)', () => {
	const { methods: _m, ...noMethods } = listed;
	assert.equal(filterAtTarget(noMethods, edit), false);
	assert.equal(filterAtTarget(undefined, edit), false);
});

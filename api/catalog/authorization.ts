import { z } from 'zod/v4';
import { defineOp, field, rec, req } from './define';
import { nonEmpty } from './rules';

/** §4.1 Authorization operations (under {base_url}/oauth). */

const appId = field('app_id', 'body', 'string', nonEmpty(), 'App id from the developer platform', req);
const secret = field('secret', 'body', 'secret', nonEmpty(), 'App secret from the developer platform', req);

export const tokenResult = rec({
	access_token: z.string().min(1),
	expires_in: z.number().int().positive(),
	refresh_token: z.string().optional(),
	scope: z.string().optional(),
	svc_account: z.string().optional(),
});

export const authorization = [
	defineOp({
		id: 'authorization.connect',
		section: '4.1',
		resource: 'authorization',
		action: 'connect',
		summary: 'Start the user-token flow: the service redirects to redirect_uri with code and state',
		method: 'GET',
		path: '/oauth/connect',
		encoding: 'redirect',
		auth: 'none',
		safety: 'read',
		fields: [
			field('app_id', 'query', 'string', nonEmpty(), 'App id', req),
			field(
				'redirect_uri',
				'query',
				'string',
				z.url({ error: 'must be an absolute http(s) URL on the domain registered for the app' }),
				'Where the service redirects with code and state (must share the registered host domain)',
				req,
			),
			field('response_type', 'query', 'string', z.literal('code'), 'Always code', { constant: 'code' }),
			field('scope', 'query', 'string', z.literal('install_login'), 'Always install_login', {
				constant: 'install_login',
			}),
			field('xspe', 'query', 'string', z.string(), 'Passed by the portal to the app entrance API'),
			field(
				'state',
				'query',
				'string',
				nonEmpty('is required (random, for CSRF protection)'),
				'Random value checked on return',
				req,
			),
			field('customer_id', 'query', 'string', z.string(), 'Passed by the portal'),
		],
		result: rec({ code: z.string().min(1), state: z.string() }),
	}),
	defineOp({
		id: 'authorization.accessToken',
		section: '4.1',
		resource: 'authorization',
		action: 'accessToken',
		summary: 'Exchange an authorization code for a user access token and refresh token',
		method: 'POST',
		path: '/oauth/access_token',
		encoding: 'form',
		auth: 'none',
		safety: 'unsafe',
		fields: [
			appId,
			secret,
			field('code', 'body', 'secret', nonEmpty(), 'Code received on redirect_uri', req),
			field('grant_type', 'body', 'string', z.literal('authorization_code'), 'authorization_code', {
				constant: 'authorization_code',
			}),
		],
		result: tokenResult,
	}),
	defineOp({
		id: 'authorization.refreshToken',
		section: '4.1',
		resource: 'authorization',
		action: 'refreshToken',
		summary: 'Renew a user token; the returned refresh token replaces the old one',
		method: 'POST',
		path: '/oauth/refresh_token',
		encoding: 'form',
		auth: 'none',
		safety: 'unsafe',
		fields: [
			appId,
			field('refresh_token', 'body', 'secret', nonEmpty(), 'Current refresh token', req),
			field('grant_type', 'body', 'string', z.literal('refresh_code'), 'refresh_code', { constant: 'refresh_code' }),
		],
		result: tokenResult,
	}),
	defineOp({
		id: 'authorization.appToken',
		section: '4.1',
		resource: 'authorization',
		action: 'appToken',
		summary: 'Get an app token (client credential) acting for the app itself',
		method: 'POST',
		path: '/oauth/credit/token',
		encoding: 'form',
		auth: 'none',
		safety: 'idempotent',
		fields: [
			appId,
			secret,
			field('grant_type', 'body', 'string', z.literal('client_credential'), 'client_credential', {
				constant: 'client_credential',
			}),
		],
		result: tokenResult,
	}),
];

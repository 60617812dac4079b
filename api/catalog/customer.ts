import { z } from 'zod/v4';
import { defineOp, field, rec, req } from './define';
import { idString, int } from './rules';

/** §4.2 Customer operations. */

const protectServices = rec({
	application_protection: z.number().int(),
	origin_protection: z.number().int(),
	dns_protection: z.number().int(),
	cdn_federation: z.number().int(),
});

export const customer = [
	defineOp({
		id: 'customer.get',
		section: '4.2',
		resource: 'customer',
		action: 'get',
		summary: 'Get a customer (detail and protect_services)',
		method: 'GET',
		path: '/api/spe/customer/{customer_id}',
		encoding: 'query',
		auth: 'access_token',
		safety: 'read',
		fields: [field('customer_id', 'path', 'string', idString('a customer id'), 'Customer id', req)],
		result: rec({
			website: z.string(),
			address: z.string(),
			phone: z.string(),
			company: z.string(),
			customer_name: z.string(),
			email: z.string(),
			protect_services: protectServices,
		}),
	}),
	defineOp({
		id: 'customer.list',
		section: '4.2',
		resource: 'customer',
		action: 'list',
		summary: 'List the customers of an SPE portal (one page)',
		method: 'GET',
		path: '/api/spe/customers',
		encoding: 'query',
		auth: 'access_token',
		safety: 'read',
		// The spec does not show the page-selection parameter; we send `page` (1-based) only when asked.
		fields: [
			field(
				'page',
				'query',
				'integer',
				int('must be a positive integer').pipe(z.number().min(1, { error: 'must be a positive integer' })),
				'Page to fetch (1-based; parameter name not shown in the spec)',
			),
		],
		result: rec({
			pages: z.number().int(),
			page: z.number().int(),
			customer: z.array(rec({ customer_name: z.string(), customer_id: z.string(), protect_services: protectServices })),
		}),
		list: { itemsAt: 'customer', paging: 'page' },
	}),
];

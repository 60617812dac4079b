/** §4.2 customers of an SPE portal (one customer, paged list). */
import { notFound } from '../util.mts';
import { type HandlerDef } from './shared.mts';

export const customers: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.2 customers
	'customer.get': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			const cu = sim.world.customers.get(c.params.customer_id);
			if (!cu) throw notFound(`customer_id: customer '${c.params.customer_id}' does not exist`);
			const { website, address, phone, company, customer_name, email, protect_services } = cu;
			return { website, address, phone, company, customer_name, email, protect_services: { ...protect_services } };
		},
	},
	'customer.list': {
		enc: 'query',
		fn: (sim, c) => {
			const page = c.q.int('page', false, 1) ?? 1;
			c.done();
			const all = [...sim.world.customers.values()];
			const size = sim.opts.pageSize;
			return {
				pages: Math.max(1, Math.ceil(all.length / size)),
				page,
				customer: all.slice((page - 1) * size, page * size).map((x) => ({
					customer_name: x.customer_name,
					customer_id: x.customer_id,
					protect_services: { ...x.protect_services },
				})),
			};
		},
	},
};

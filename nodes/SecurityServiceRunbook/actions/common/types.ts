import type { IBinaryKeyData, IDataObject, IExecuteFunctions } from 'n8n-workflow';

/** A Temporal HTTP API answer: its status and its JSON body ({} when empty). */
export interface Http {
	status: number;
	body: IDataObject;
}

/** What an operation gets for one input item: the node, the item, Temporal's URLs and the checked-input helpers. */
export interface Env {
	ctx: IExecuteFunctions;
	i: number;
	ns: string;
	/** …/api/v1/namespaces/{ns}/workflows */
	workflowsUrl: string;
	wfUrl(id: string): string;
	/** One exchange; the answer whatever its status (the operation reads refusals itself). */
	call(method: 'GET' | 'POST', url: string, body?: IDataObject, qs?: IDataObject): Promise<Http>;
	/** One exchange whose answer must succeed: a status of 400 or more is a node error. */
	send(method: 'GET' | 'POST', url: string, body?: IDataObject): Promise<IDataObject>;
	/** The Temporal credential's Payload Key (`id:BASE64`, '' when none): seals a decision that carries an ID token. */
	payloadKey: string;
	fail(field: string, rule: string): never;
	text(field: string, v: unknown): string;
}

/** An operation returns the output items of one input item (the router pairs them with it). */
export type OperationFn = (env: Env) => Promise<Array<{ json: IDataObject; binary?: IBinaryKeyData }>>;

import { z } from 'zod/v4';

/**
 * The endpoint catalog: every operation of the Security Service Open API as data.
 *
 * One `Operation` per spec row. The client, the n8n node, the Temporal activities and the
 * simulator's routes are all derived from these records (the simulator takes only `id`, `method`
 * and `path`; it keeps its own rule checks).
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * How the request parameters travel.
 * - `multipart`: multipart/form-data body (the spec's default).
 * - `json`: application/json body (IP authentication).
 * - `form`: application/x-www-form-urlencoded body (`/oauth/*`).
 * - `query`: everything in the query string (GETs and the DELETEs).
 * - `redirect`: GET whose answer is an HTTP redirect (`/oauth/connect`).
 */
export type BodyEncoding = 'multipart' | 'json' | 'form' | 'query' | 'redirect';

/** Where a field goes. `body` follows the operation's encoding. */
export type FieldLocation = 'path' | 'query' | 'body';

/** The kind of a field, used by UIs (n8n) to choose a widget. */
export type FieldKind = 'string' | 'integer' | 'boolean01' | 'options' | 'stringList' | 'object' | 'secret';

/**
 * How an array travels in a multipart body or query string.
 * - `repeat`: the name repeated once per element (`methods=GET&methods=POST`).
 * - `csv`: one value, elements joined by commas (the IP-list DELETEs, per the spec).
 */
export type ArrayWire = 'repeat' | 'csv';

export interface Field {
	name: string;
	in: FieldLocation;
	kind: FieldKind;
	required: boolean;
	description: string;
	/** Allowed values, for `options` fields (also used by UIs). */
	options?: readonly (string | number)[];
	/** Default shown by UIs; never injected silently into requests. */
	default?: unknown;
	/** Display hint: show only when another field has one of these values. */
	showWhen?: Record<string, readonly (string | number)[]>;
	/** How arrays travel; default `repeat`. */
	arrayWire?: ArrayWire;
	/** The field's own rule. Cross-field rules live in `Operation.refine`. */
	schema: z.ZodType;
	/** Value sent when the caller gives none (constants such as grant_type). */
	constant?: string;
	/** A client-side option that selects rules and is never sent (e.g. the X-Forwarded-For portal version). */
	local?: boolean;
}

/** read: safe to retry; idempotent: repeating it has the same effect; unsafe: never retried blindly. */
export type Safety = 'read' | 'idempotent' | 'unsafe';

export type Auth = 'access_token' | 'none';

export interface Operation {
	/** Stable id: `<resource>.<group>.<action>` or `<resource>.<action>`. */
	id: string;
	/** Spec section, e.g. "4.3". */
	section: string;
	/** n8n resource and (optional) sub-resource, and the operation's short name. */
	resource: string;
	group?: string;
	action: string;
	summary: string;
	method: HttpMethod;
	/** Path template in the spec's `{placeholder}` form. */
	path: string;
	encoding: BodyEncoding;
	auth: Auth;
	safety: Safety;
	fields: readonly Field[];
	/** Cross-field rules (conditional requirements, exclusive objects, …). */
	refine?: (value: Record<string, unknown>, ctx: RefineCtx) => void;
	/** Schema of `result` (the envelope's payload). `z.undefined()`-like for writes. */
	result: z.ZodType;
	/** For list results: where the items are inside `result` (`''` = result is the array). */
	list?: { itemsAt: string; paging?: 'startNum' | 'page'; totalAt?: string };
	/** Maximum window of a time range, in seconds, for operations that have one. */
	window?: { startField: string; endField: string; maxSeconds: number; format: 'ymdhms' | 'unix' };
}

export interface RefineCtx {
	/** Report a broken rule on a field. The message states the rule. */
	issue(field: string, rule: string): void;
}

export type CatalogEntry = Operation & { request: z.ZodType<Record<string, unknown>> };

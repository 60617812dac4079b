/**
 * Envelope codes the simulator answers with. The spec says only "0 = success, anything else = failure"
 * (§7: "The list of non-zero codes … not shown"), so these are our choice; they are documented in
 * simulator/README.md and exported so tests can assert them.
 */
export const CODES = {
	OK: 0,
	/** A field breaks a rule of the spec (missing, wrong type, out of range, conditional requirement). */
	VALIDATION: 40001,
	/** Unsupported content type for the operation (e.g. urlencoded sent where multipart is declared). */
	BAD_CONTENT_TYPE: 40002,
	/** access_token missing, unknown or expired. */
	INVALID_TOKEN: 40101,
	/** app_id unknown or secret wrong. */
	INVALID_CLIENT: 40102,
	/** Authorization code unknown / used / expired, or refresh token unknown / rotated / expired. */
	INVALID_GRANT: 40103,
	/** redirect_uri does not share the registered host's domain. */
	INVALID_REDIRECT: 40104,
	/** The token kind is not accepted by this operation (only when token kinds are configured). */
	FORBIDDEN: 40301,
	/** Strict tenancy: the token belongs to another customer (user token) or is the app token outside the portal operations. */
	FOREIGN_TENANT: 40302,
	/** No such customer / site / domain-port / network / host / policy / entry / event / route. */
	NOT_FOUND: 40401,
	/** Concurrent create/edit of HTTP filter policies on one domain-port (§4.3.1, §7). */
	CONFLICT_BUSY: 40901,
	/** The entry already exists where duplicates are not allowed (status code overwrite entries). */
	CONFLICT_EXISTS: 40902,
	/** Rate limited (only by fault injection or the optional rate limiter). */
	RATE_LIMITED: 42901,
	/** Internal error (also the default code of injected `code` faults). */
	INTERNAL: 50001,
} as const;

import { parseIpv4Entry, type Ipv4Range } from '../catalog/ipv4';

/**
 * The allow-list always wins (issue 39 item 4): when a range is allowed through our tools (a whitelist entry, a
 * protected range of the credential, the worker's configuration, a tenant's declaration, a plan), the live blocks
 * that overlap it end at once — expiring blocks by their `removeBlock` Update, a running runbook's own entries by its
 * `allowListed` Update — each reported with the reason. Overlap, not cover: a block of which one address is allowed
 * must not stay (the conservative reading; the spec says nothing about partial overlaps).
 */

/** Update of a running attack response: end its own blacklist entries that overlap these ranges, at once. */
export const ALLOW_LISTED_UPDATE = 'allowListed';

export interface AllowListedRequest {
	/** Allowed ranges (address, start-end or CIDR). */
	ranges: string[];
	/** Why they are allowed (recorded on each ended entry): "whitelist entry added by alice", … */
	reason: string;
	/** Only this domain-port's entries (a whitelist is per domain-port); absent: every domain-port. */
	domain_port_id?: string;
}

export interface AllowEnded {
	kind: 'expiring block' | 'runbook entry';
	site_id: string;
	domain_port_id: string;
	entry: string;
	/** The block's or the runbook's workflow id. */
	owner: string;
	/** The allowed range it overlapped and why it was allowed. */
	reason: string;
}

export const MAX_ALLOW_RANGES = 1000;

/** Problems of a request (field and rule), empty when it is valid. */
export function allowRequestProblems(r: unknown): string[] {
	const o = r as Partial<AllowListedRequest> | undefined;
	if (!o || typeof o !== 'object') return ['request: must be an object { ranges, reason }'];
	const out: string[] = [];
	if (!Array.isArray(o.ranges) || !o.ranges.length || o.ranges.length > MAX_ALLOW_RANGES)
		out.push(`ranges: must be a list of 1 to ${MAX_ALLOW_RANGES} ranges`);
	else
		o.ranges.forEach((x, i) => {
			if (typeof x !== 'string' || !parseIpv4Entry(x))
				out.push(`ranges.${i}: must be an IPv4 address, start-end range or CIDR`);
		});
	if (typeof o.reason !== 'string' || !o.reason.trim() || o.reason.length > 500)
		out.push('reason: must be a non-empty text of at most 500 characters');
	if (o.domain_port_id !== undefined && typeof o.domain_port_id !== 'string')
		out.push('domain_port_id: must be a string');
	return out;
}

export const overlaps = (a: Ipv4Range, b: Ipv4Range) => a.start <= b.end && b.start <= a.end;

/** The first allowed range an entry overlaps (its text), or undefined. */
export function allowedOverlap(entry: string, allowed: readonly string[]): string | undefined {
	const e = parseIpv4Entry(entry);
	if (!e) return undefined;
	return allowed.find((a) => {
		const r = parseIpv4Entry(a);
		return r !== undefined && overlaps(e, r);
	});
}

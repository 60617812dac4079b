import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { workflowIdFor } from '../../api/runbook/contract.ts';
import { allowedOverlap, allowRequestProblems, type AllowEnded } from '../../api/runbook/allowRules.ts';
import { allowListedUpdate } from '../attackResponse/allowList.mts';
import { listBlocks, removeBlock } from './client.mts';

/**
 * The allow-list always wins (issue 39 item 4; api/runbook/allowRules.ts): for a site and allowed ranges, ends at once
 * every live expiring block that overlaps one (its `removeBlock` Update, `by` naming the reason) and every entry of the
 * site's running attack response that does (its `allowListed` Update). Returns each ended block with its reason, and
 * what could not be ended (a runbook on a build before it, a block that refused, a block whose add's outcome is
 * unknown) — never silently.
 */
export interface AllowResult {
	ended: AllowEnded[];
	notEnded: { owner: string; entry?: string; why: string }[];
}

const LIVE = ['adding', 'active', 'queued'];

export async function allowListWins(
	client: Client,
	site: string,
	ranges: string[],
	reason: string,
	dp?: string,
): Promise<AllowResult> {
	const p = allowRequestProblems({ ranges, reason, ...(dp ? { domain_port_id: dp } : {}) });
	if (p.length) throw new Error(`allow-list: ${p.join('; ')}`);
	const out: AllowResult = { ended: [], notEnded: [] };
	// The runbook first: a block queued behind its entry then only leaves the queue.
	await endRunbookEntries(client, site, ranges, reason, dp, out);
	for (const b of await listBlocks(client, site, dp)) {
		const hit = LIVE.includes(b.state) || b.state === 'unknown' ? allowedOverlap(b.range, ranges) : undefined;
		if (!hit) continue;
		if (b.state === 'unknown') {
			// Its entry may be someone else's (workflows/blocks/adds.mts): no block removes it; a person checks it.
			const why = `outcome unknown: ${b.range} overlaps ${hit}; if it is still on the blacklist it may be someone else's entry, so no block removes it — check it`;
			out.notEnded.push({ owner: `blocks-${site}-${b.domain_port_id}`, entry: b.range, why });
			continue;
		}
		const why = `allow-list wins: ${b.range} overlaps ${hit} (${reason})`;
		try {
			await removeBlock(client, site, b.domain_port_id, { entry: b.entry, by: why.slice(0, 200), via: 'cli' });
			out.ended.push({
				kind: 'expiring block',
				site_id: site,
				domain_port_id: b.domain_port_id,
				entry: b.range,
				owner: `blocks-${site}-${b.domain_port_id}`,
				reason: why,
			});
		} catch (e) {
			out.notEnded.push({
				owner: `blocks-${site}-${b.domain_port_id}`,
				entry: b.range,
				why: String((e as Error)?.message ?? e),
			});
		}
	}
	return out;
}

async function endRunbookEntries(
	client: Client,
	site: string,
	ranges: string[],
	reason: string,
	dp: string | undefined,
	out: AllowResult,
): Promise<void> {
	const id = workflowIdFor(site);
	const h = client.workflow.getHandle(id);
	try {
		if ((await h.describe()).status.name !== 'RUNNING') return;
	} catch (e) {
		if (e instanceof WorkflowNotFoundError) return;
		throw e;
	}
	try {
		const r = await h.executeUpdate(allowListedUpdate, {
			args: [{ ranges, reason, ...(dp ? { domain_port_id: dp } : {}) }],
		});
		out.ended.push(...r);
	} catch (e) {
		const msg = String((e as Error)?.message ?? e);
		out.notEnded.push({
			owner: id,
			why: /handler|not found|unknown update/i.test(msg)
				? `the runbook runs on a build before the allow-list Update: its entries end at its revert (${msg})`
				: msg,
		});
	}
}

/** One line per ended block, then what was not ended. */
export function formatAllow(r: AllowResult): string {
	const lines = r.ended.map(
		(e) => `ended  ${e.kind.padEnd(14)} ${e.domain_port_id} ${e.entry} (${e.owner}) — ${e.reason}`,
	);
	for (const n of r.notEnded) lines.push(`NOT ENDED ${n.owner}${n.entry ? ` ${n.entry}` : ''} — ${n.why}`);
	return lines.length ? lines.join('\n') : 'no live block overlaps the allowed ranges';
}

/** After a whitelist entry was asked for through `secsvc call`: the blocks that overlap it end (call.mts). */
export async function afterWhitelistAdd(
	client: Parameters<typeof allowListWins>[0],
	params: Record<string, unknown>,
	by: string,
): Promise<AllowResult | undefined> {
	const site = params.site_id;
	const dp = params.domain_port_id;
	const entry = params.ip_white_list;
	if (typeof site !== 'string' || typeof dp !== 'string' || typeof entry !== 'string') return undefined;
	return allowListWins(client, site, [entry], `whitelist entry ${entry} added by ${by}`, dp);
}

/** After a tenant declared its protected ranges (`secsvc tenants add|install --protected`): on each of its sites. */
export async function afterTenantRanges(
	client: Parameters<typeof allowListWins>[0],
	customerId: string,
	sites: string[],
	ranges: string[] | undefined,
	out: (v: unknown) => void,
): Promise<void> {
	if (!ranges?.length) return;
	for (const site of sites) {
		const r = await allowListWins(client, site, ranges, `protected range declared by tenant ${customerId}`);
		if (r.ended.length || r.notEnded.length) out(formatAllow(r));
	}
}

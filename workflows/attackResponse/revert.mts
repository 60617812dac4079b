import { CancellationScope } from '@temporalio/workflow';
import type { Change } from '../defs.mts';
import { ITEM_GROUP } from '../planShared.mts';
import { entryRange, parseAll, type ListEntry, type Range } from '../ranges.mts';
import { iso, type Acts, type PlanContext, type Runbook } from './context.mts';
import { applyChange } from './apply.mts';
import { dpOf, errText, findSwitch, ipAuthBody, opOf, pickLeaf, sameJson, sameLeaf } from './settings.mts';

/**
 * Step 6 — revert, whatever happened before (success, abort, failure, cancellation): walks the changes in reverse,
 * reads the live value and restores the snapshot only where the live value is still the runbook's; a value an
 * operator set meanwhile is kept and reported as a conflict.
 */
export async function revertAll(rb: Runbook, ctx: PlanContext): Promise<void> {
	rb.phase('reverting');
	await CancellationScope.nonCancellable(async () => {
		for (const c of [...rb.changes].reverse()) {
			if (c.status !== 'applied' && c.status !== 'pending') {
				if (c.status === 'planned') c.status = 'unchanged';
				continue;
			}
			try {
				await revertChange(ctx.revertActs, ctx.revertReads, c);
			} catch (e) {
				c.status = 'revert-failed';
				c.note = errText(e);
			}
			c.revertedAt = iso(Date.now());
			rb.obs.reverted(c);
			const conflict = (c.status as Change['status']) === 'conflict';
			rb.log('reverting', c.what, conflict ? 'operator changed it during the attack: operator value kept' : 'restore the snapshot', {
				before: c.after,
				after: conflict ? c.live : c.before,
				result: c.status + (c.note ? `: ${c.note}` : ''),
			});
		}
	});
	rb.state.revertedAt = iso(Date.now());
}

type Decision = 'restore' | 'unchanged' | 'conflict';

async function revertChange(acts: Acts, reads: Acts, c: Change): Promise<void> {
	const t = c.target;
	const decide = (live: unknown, eqAfter: boolean, eqBefore: boolean): Decision => {
		if (eqAfter) return 'restore';
		if (eqBefore) return 'unchanged';
		c.live = live;
		return 'conflict';
	};
	let d: Decision;
	switch (c.kind) {
		case 'blacklistAdd': {
			const list = ((await reads['applicationProtection.ipBlacklist.get'](dpOf(t)))?.p_info?.ipv4?.black_soc ?? []) as ListEntry[];
			const live = list.map(entryRange).filter((r): r is Range => r !== undefined);
			const present = (c.after as string[]).filter((e) => {
				const r = parseAll([e]).ranges[0];
				return r && live.some((l) => l.start === r.start && l.end === r.end);
			});
			if (present.length) await acts['applicationProtection.ipBlacklist.remove']({ ...dpOf(t), ip_black_list: present });
			const gone = (c.after as string[]).filter((e) => !present.includes(e));
			if (gone.length) c.note = `already removed by someone else: ${gone.join(', ')}`;
			c.status = present.length ? 'restored' : 'unchanged';
			return;
		}
		case 'detectionMode': {
			const live = Number((await reads['detection.getPolicy'](opOf(t)))?.model);
			d = decide(live, live === Number(c.after), live === Number(c.before));
			break;
		}
		case 'detectionPolicy': {
			const pol = await reads['detection.getPolicy'](opOf(t));
			const leaf = pickLeaf(pol?.[ITEM_GROUP[t.name]]?.[t.name] ?? {});
			d = decide(leaf, sameLeaf(leaf, c.after as Record<string, unknown>), sameLeaf(leaf, c.before as Record<string, unknown>));
			break;
		}
		case 'ipAuth': {
			const live = ipAuthBody(await reads['applicationProtection.authIp.get'](dpOf(t)));
			d = decide(live, sameJson(live, c.after), sameJson(live, c.before));
			break;
		}
		case 'switch': {
			const node = findSwitch(await reads['applicationProtection.switch.list'](dpOf(t)), t.name);
			const v = node ? Number(node.enable) : undefined;
			d = decide(v, v === c.after, v === c.before);
			break;
		}
	}
	if (d === 'restore') await applyChange(acts, c, 1, c.before);
	c.status = d === 'restore' ? 'restored' : d;
}

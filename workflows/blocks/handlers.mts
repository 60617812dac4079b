import { condition, log as wlog, patched, setHandler } from '@temporalio/workflow';
import { claim, release } from '../coordinator/claims.mts';
import { handedOverSignal, MAX_KEYS } from '../coordinator/coordination.mts';
import {
	ACTIVE_STATES,
	addBlocksUpdate,
	addBlockUpdate,
	blockKey,
	blocksQuery,
	checkBlockRequest,
	checkBulkRequest,
	checkChangeRequest,
	extendBlockUpdate,
	removalIntentSignal,
	removeBlockUpdate,
	type Block,
	type BlockRequest,
} from './shared.mts';
import { errText, holdReason, iso, type BlocksRun, type Pending } from './context.mts';
import { blockCarryBytes, carriedBytes, checkBlockCapacity } from '../../api/blockCapacity.ts';

/**
 * The expiring blocks' Updates (addBlock, addBlocks, extendBlock, removeBlock: each with a validator that refuses
 * bad input, naming the field, before anything is recorded), the `blocks` query and the coordinator's hand-over
 * signal. An add is queued for the main loop (blocks.mts), which sends the adds of one moment as one batch.
 */
export function registerBlocksHandlers(run: BlocksRun): void {
	registerAdds(run);
	registerChanges(run);
	setHandler(blocksQuery, () => [...run.byRange.values(), ...run.ended]);
	// The removal's own record in the history (read by a later attempt after a lost task): nothing to do here.
	setHandler(removalIntentSignal, () => undefined);
	setHandler(handedOverSignal, (sig: unknown) => onHandedOver(run, sig));
}

/** addBlock and addBlocks: checked, then queued for the main loop. */
function registerAdds(run: BlocksRun): void {
	const { dp, maxPrefix, byRange } = run;
	setHandler(
		addBlockUpdate,
		async (req) => {
			const p = enqueue(run, req, checkBlockRequest(req, maxPrefix));
			await condition(() => p.done === true);
			if (p.error) throw p.error;
			return p.block;
		},
		{
			validator: (req) => {
				const range = checkBlockRequest(req, maxPrefix);
				const cur = byRange.get(range);
				if (cur && ACTIVE_STATES.includes(cur.state))
					throw new Error(
						`entry: ${range} is already blocked on ${dp} until ${cur.expiresAt} (${cur.state}); extend it instead`,
					);
				checkCarry(run, 'entry', [range], [req]);
			},
		},
	);

	setHandler(
		addBlocksUpdate,
		async (req) => {
			const ranges = checkBulkRequest(req, maxPrefix);
			const ps = req.blocks.map((b, i) => enqueue(run, b, ranges[i]));
			await condition(() => ps.every((p) => p.done === true));
			return {
				blocks: ps.flatMap((p) => (p.error ? [] : [p.block])),
				refused: ps.flatMap((p) =>
					p.error ? [p.refusal ?? { entry: p.block.entry, field: 'entry', rule: errText(p.error) }] : [],
				),
			};
		},
		{
			validator: (req) => {
				const ranges = checkBulkRequest(req, maxPrefix);
				ranges.forEach((range, i) => {
					const cur = byRange.get(range);
					if (cur && ACTIVE_STATES.includes(cur.state))
						throw new Error(
							`blocks[${i}].entry: ${range} is already blocked on ${dp} until ${cur.expiresAt} (${cur.state}); extend it instead`,
						);
				});
				checkCarry(run, 'blocks', ranges, req.blocks);
			},
		},
	);
}

/** An add that would make this shard carry too many blocks, or too heavy ones, across continue-as-new is refused. */
function checkCarry(run: BlocksRun, field: string, ranges: string[], reqs: BlockRequest[]): void {
	const { site, dp, byRange } = run;
	const active = [...byRange.values()].filter((b) => ACTIVE_STATES.includes(b.state));
	const addingBytes = reqs.reduce((n, r, i) => n + blockCarryBytes(site, dp, ranges[i], r), 0);
	checkBlockCapacity({
		field,
		site,
		dp,
		adding: reqs.length,
		addingBytes,
		carried: carriedBytes(active),
		active: active.length,
	});
}

function enqueue(run: BlocksRun, req: BlockRequest, range: string): Pending {
	const { site, dp, byRange } = run;
	const { local } = run.modes;
	const now = Date.now();
	const block: Block = {
		site_id: site,
		domain_port_id: dp,
		range,
		entry: req.entry.trim(),
		expiresAt: iso(now + req.seconds * 1000),
		by: req.by,
		reason: req.reason,
		via: req.via ?? 'api',
		state: 'adding',
		addedAt: iso(now),
		...(req.adopt ? { adopt: true as const } : {}),
	};
	byRange.set(range, block);
	if (local) {
		// Re-added before the release of its earlier block was sent: the hold just stays.
		const i = run.toRelease.indexOf(blockKey(dp, range));
		if (i >= 0) run.toRelease.splice(i, 1);
	}
	const p: Pending = { req, block };
	run.pending.push(p);
	run.wake();
	return p;
}

/** The block an extend or a remove names: active, and not in the middle of its add or removal. */
function currentBlock(
	run: BlocksRun,
	entry: string,
	withSeconds: boolean,
	req: { entry: string; seconds?: number; by: string },
) {
	const { dp, byRange } = run;
	const range = checkChangeRequest(req as never, withSeconds);
	const b = byRange.get(range);
	if (!b || !ACTIVE_STATES.includes(b.state)) throw new Error(`entry: no active block for ${entry} on ${dp}`);
	if (b.state === 'adding' || b.state === 'removing')
		throw new Error(`entry: the block of ${range} is ${b.state}; try again in a moment`);
	return b;
}

/** extendBlock and removeBlock. */
function registerChanges(run: BlocksRun): void {
	const { site, dp } = run;
	const current = (entry: string, withSeconds: boolean, req: { entry: string; seconds?: number; by: string }) =>
		currentBlock(run, entry, withSeconds, req);
	setHandler(
		extendBlockUpdate,
		async (req) => {
			const b = current(req.entry, true, req);
			const at = iso(Date.now() + (req.seconds as number) * 1000);
			b.expiresAt = at;
			(b.changes ??= []).push({ at: iso(Date.now()), by: req.by, expiresAt: at });
			// The hold's `until` follows the expiry (same owner: the coordinator moves it; queued: the successor's ttl).
			await claim(site, {
				keys: [blockKey(dp, b.range)],
				mode: 'hold',
				queue: true,
				reason: holdReason(b),
				ttlSeconds: run.ttlFor(b),
			});
			run.wake();
			return b;
		},
		{ validator: (req) => void current(req?.entry, true, req) },
	);

	setHandler(
		removeBlockUpdate,
		async (req) => {
			const b = current(req.entry, false, req);
			(b.changes ??= []).push({ at: iso(Date.now()), by: req.by, expiresAt: iso(Date.now()) });
			if (b.state === 'queued') {
				const r = await release(site, [blockKey(dp, b.range)], true);
				if (r.dequeued) {
					run.end(
						b,
						'cancelled',
						`removed by ${req.by} before the holder handed the entry over: the entry stays with its holder`,
					);
					return b;
				}
				b.state = 'active'; // handed over meanwhile: ours to remove
			}
			b.expiresAt = iso(Date.now());
			b.note = `removed now by ${req.by}`;
			run.wake();
			await condition(() => !ACTIVE_STATES.includes(b.state));
			return b;
		},
		{ validator: (req) => void current(req?.entry, false, req) },
	);
}

/**
 * The coordinator's `handedOver` signal: keys that passed to this workflow. A key handed over (its holder wrote the
 * entry) makes its queued block active; a key released (`released`) is checked as a fresh add (BlocksRun.recheck).
 */
function onHandedOver(run: BlocksRun, sig: unknown): void {
	const { site, dp, byRange } = run;
	const { local } = run.modes;
	// Sent by the site's coordinator; anything else (not this site, not this domain-port's keys) changes nothing.
	const s = sig as { site_id?: unknown; keys?: unknown; released?: unknown } | null;
	const keys = s?.keys;
	const ours = (k: unknown) => typeof k === 'string' && k.startsWith(run.keyPrefix);
	if (
		!s ||
		s.site_id !== site ||
		!Array.isArray(keys) ||
		keys.length > MAX_KEYS ||
		!keys.every(ours) ||
		(s.released !== undefined && (!Array.isArray(s.released) || !s.released.every((k) => keys.includes(k))))
	) {
		wlog.warn("handedOver signal refused: not from this site's coordinator for this domain-port", {
			site_id: site,
			domain_port_id: dp,
		});
		return;
	}
	// Keys released, not handed over: their holder never wrote the entry (or died). Since `blocks-released-keys` a
	// block does not own such an entry by that: it checks it as a fresh add (BlocksRun.recheck).
	const released = new Set(
		run.modes.bulk && Array.isArray(s.released) && s.released.length && patched('blocks-released-keys')
			? (s.released as string[])
			: [],
	);
	for (const key of keys as string[]) {
		const b = byRange.get(key.slice(run.keyPrefix.length));
		const plain = released.has(key);
		if (b?.state === 'queued' && plain) {
			b.note = `${b.note ?? ''} released, not handed over, at ${iso(Date.now())}: checked as a fresh add`.trim();
			run.recheck(b);
		} else if (b?.state === 'queued') {
			b.state = 'active';
			b.note = `${b.note ?? ''} handed over at ${iso(Date.now())}`.trim();
		} else if (b?.state === 'adding') (plain ? run.released : run.handed).add(key);
		else if (local)
			run.queueRelease(key); // nobody waits for it any more
		else run.toRelease.push(key);
	}
	run.wake();
}

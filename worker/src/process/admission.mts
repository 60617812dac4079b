/**
 * Admission control: a worker caches at most `limit` workflows of its task queue. At the limit it stops taking NEW
 * work from the task queue's normal queue; its cached workflows keep running (their tasks come on the worker's sticky
 * queue), and the waiting runbooks stay on the server, where another worker with room (or this one, once a runbook
 * ends) picks them up. Memory per worker is then bounded by the limit, whatever the attack storm: ~0.2 MB per cached
 * runbook on top of ~180 MB idle (docs/worker/production.md "Memory").
 *
 * Why it cannot deadlock on the one-owner rule: a runbook's first step claims its settings at the site coordinator,
 * and a coordinator's first task would wait behind the runbook backlog on the same normal queue. The coordinators
 * therefore run on their own task queue (`coordinatorQueueFor`), polled by a second worker in the same process that
 * has no admission limit. And if every cached workflow of this worker waits on a task that went back to the normal
 * queue (a sticky task not picked up in time), nothing completes: after `stallMs` without a workflow task completing
 * one normal poll is let through, so a stall cannot last.
 *
 * It is a workflow-task slot supplier of the SDK's tuner (`tuner.workflowTaskSlotSupplier`, type `custom`): a slot is
 * reserved before each poll; `isSticky` says which queue the poll is for.
 */
import type { CustomSlotSupplier, SlotPermit, SlotReserveContext, WorkflowSlotInfo } from '@temporalio/worker';

export const coordinatorQueueFor = (taskQueue: string) => `${taskQueue}-coordinators`;

export interface AdmissionOptions {
	/** Cached workflows at which the worker stops taking new ones from the normal queue. */
	limit: number;
	/** Workflow tasks run at once (what maxConcurrentWorkflowTaskExecutions sets without a tuner). */
	maxConcurrent: number;
	/** With a full cache and no workflow task completed for this long, one normal poll goes through anyway. */
	stallMs?: number;
}

export class AdmissionSlots implements CustomSlotSupplier<WorkflowSlotInfo> {
	readonly type = 'custom' as const;
	private inUse = 0;
	/** Normal-queue slots reserved and not yet released: each may bring a workflow the cache does not hold yet. */
	private normalReserved = 0;
	private lastRelease = Date.now();
	private waiters = new Set<() => void>();
	private cached: () => number = () => 0;
	/** Normal polls refused at least once because of the limit, and stalls broken (for the worker's log and tests). */
	readonly stats = { held: 0, stallsBroken: 0 };
	private readonly stallMs: number;
	private timer: NodeJS.Timeout | undefined;

	/** Told once when the limit starts holding new workflows back, and once when it stops (the worker logs both). */
	onChange?: (holding: boolean) => void;
	private holding = false;

	constructor(private readonly o: AdmissionOptions) {
		this.stallMs = o.stallMs ?? 5000;
	}

	private setHolding(h: boolean) {
		if (h === this.holding) return;
		this.holding = h;
		this.onChange?.(h);
	}

	/** The worker's cached-workflow count (Worker.getStatus().numCachedWorkflows), bound once the worker exists. */
	bind(cached: () => number) {
		this.cached = cached;
	}

	private admits(ctx: Pick<SlotReserveContext, 'isSticky'>): boolean {
		if (this.inUse >= this.o.maxConcurrent) return false;
		if (ctx.isSticky) return true;
		if (this.cached() + this.normalReserved < this.o.limit) return true;
		// stalled: a full cache and nothing completed for stallMs
		if (Date.now() - this.lastRelease >= this.stallMs && this.normalReserved === 0) {
			this.stats.stallsBroken++;
			return true;
		}
		return false;
	}

	private take(ctx: Pick<SlotReserveContext, 'isSticky'>): SlotPermit {
		this.inUse++;
		if (!ctx.isSticky) {
			this.normalReserved++;
			this.setHolding(false);
		}
		return { sticky: ctx.isSticky };
	}

	async reserveSlot(ctx: SlotReserveContext, abortSignal: AbortSignal): Promise<SlotPermit> {
		if (this.admits(ctx)) return this.take(ctx);
		if (!ctx.isSticky && this.inUse < this.o.maxConcurrent) {
			this.stats.held++;
			this.setHolding(true);
		}
		return new Promise<SlotPermit>((resolve, reject) => {
			const tryIt = () => {
				if (!this.admits(ctx)) return;
				this.waiters.delete(tryIt);
				abortSignal.removeEventListener('abort', onAbort);
				resolve(this.take(ctx));
			};
			const onAbort = () => {
				this.waiters.delete(tryIt);
				reject(abortSignal.reason);
			};
			abortSignal.addEventListener('abort', onAbort, { once: true });
			this.waiters.add(tryIt);
			this.ensureTimer();
		});
	}

	tryReserveSlot(ctx: SlotReserveContext): SlotPermit | null {
		return this.admits(ctx) ? this.take(ctx) : null;
	}

	markSlotUsed(): void {}

	releaseSlot(ctx: { permit: SlotPermit }): void {
		this.inUse = Math.max(0, this.inUse - 1);
		if ((ctx.permit as { sticky?: boolean } | undefined)?.sticky === false)
			this.normalReserved = Math.max(0, this.normalReserved - 1);
		this.lastRelease = Date.now();
		this.wake();
	}

	private wake() {
		for (const w of [...this.waiters]) w();
		if (!this.waiters.size && this.timer) {
			clearInterval(this.timer);
			this.timer = undefined;
		}
	}

	/** The cache shrinks without a slot being released (an eviction after a run ends): look again every 100 ms while someone waits. */
	private ensureTimer() {
		if (this.timer) return;
		this.timer = setInterval(() => this.wake(), 100); // cleared by wake() once nobody waits (an abort included)
	}
}

/** Fixed-size suppliers for the other slot kinds: a tuner replaces every maxConcurrent* option. */
export function admissionTuner(slots: AdmissionSlots, o: { activities: number; localActivities: number }) {
	return {
		workflowTaskSlotSupplier: slots,
		activityTaskSlotSupplier: { type: 'fixed-size' as const, numSlots: o.activities },
		localActivityTaskSlotSupplier: { type: 'fixed-size' as const, numSlots: o.localActivities },
		nexusTaskSlotSupplier: { type: 'fixed-size' as const, numSlots: 1 },
	};
}

/**
 * One schedule's actors and anchors: what each step does (an n8n-style write, a console write, an expiring block, a
 * drift enforce, a signal, a worker kill), when each anchor is reached, and what happened, in order (the trace).
 */
import type { Timeline } from './timeline.mts';
import type { WorkflowHandle } from '@temporalio/client';
import { abort, extendCooldown } from '../../../workflows/attackResponse/client.mts';
import { addBlock } from '../../../workflows/blocks/client.mts';
import { WORKFLOW_TYPE } from '../../../api/runbook/contract.ts';
import { SA } from '../../../workflows/attackResponse/searchAttributes.mts';
import proto from '@temporalio/proto';
import type { driftAudit } from '../../../workflows/drift/driftAudit.mts';
import type { Ids } from '../helpers.mts';
import { actText, IP_AUTH_VALUES, SOURCES, TCP_SYN_VALUES, type Act, type Anchor, type Schedule } from './schedule.mts';
import type { World } from './world.mts';

const { EventType } = proto.temporal.api.enums.v1;
/** A run's last event: it closed (a continue-as-new is followed, not counted). */
const CLOSED = new Set<number>([
	EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
	EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
	EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
	EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
]);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Run {
	readonly t0 = Date.now();
	readonly trace: string[] = [];
	readonly errors: string[] = [];
	/** Drift enforces and blocks still running: awaited before the final read. */
	readonly pending: Promise<unknown>[] = [];
	blocks = false;
	kills = 0;
	handle?: WorkflowHandle;
	/** Where the runbook's time went (run.mts `late`), and how long after the bound it finished. */
	timeline?: Timeline;
	lateS?: number;
	result?: Promise<unknown>;
	ended = false;
	/** Where this schedule's scan of the simulator's log stands (the wait anchor). */
	private cursor: number;

	constructor(
		readonly w: World,
		readonly s: Schedule,
		readonly ids: Ids,
	) {
		this.cursor = w.sim.sim.log.length;
	}

	note(text: string): void {
		this.trace.push(`${((Date.now() - this.t0) / 1000).toFixed(1)}s ${text}`);
	}

	/** The steps of one anchor, in order, each after its delay. A refusal of the service is part of the interleaving. */
	async anchor(anchor: Anchor): Promise<void> {
		for (const st of this.s.steps.filter((x) => x.at === anchor)) {
			await sleep(st.delayMs);
			this.note(`${anchor} ${actText(st.act)}`);
			try {
				await this.perform(st.act);
			} catch (e) {
				this.note(`  refused: ${(e as Error).message.slice(0, 160)}`);
			}
		}
	}

	private async perform(a: Act): Promise<void> {
		const { w, ids } = this;
		switch (a.actor) {
			case 'n8n':
			case 'console':
				return this.write(a);
			case 'block':
				this.blocks = true;
				await addBlock(w.client, w.queueP, ids.site_id, ids.domain_port_id, {
					entry: a.entry,
					seconds: a.seconds,
					by: 'soc-carol',
					reason: 'interleaving test',
				});
				return;
			case 'drift':
				return this.drift(a);
			case 'abort':
				if (this.handle) await abort(w.client, ids.site_id, 'oncall-bob', 'interleaving test');
				return;
			case 'extend':
				if (this.handle) await extendCooldown(w.client, ids.site_id, a.seconds, 'oncall-bob');
				return;
			case 'kill':
				if (await w.kill()) this.kills++;
				else this.note('  (kill skipped: another kill less than the gap ago)');
				return;
		}
	}

	/** The n8n node's way (the api/ client) or the console's (the simulator's control API). */
	private async write(a: Act & { actor: 'n8n' | 'console' }): Promise<void> {
		const { ids } = this;
		const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
		const op = { customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0' };
		const calls: [string, Record<string, unknown>][] = [];
		if (a.op === 'blockAttack')
			for (const e of SOURCES) calls.push(['applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: e }]);
		else if (a.op === 'blAdd') calls.push(['applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: a.entry }]);
		else if (a.op === 'blRemove')
			calls.push(['applicationProtection.ipBlacklist.remove', { ...dp, ip_black_list: [a.entry] }]);
		else if (a.op === 'ipAuth') calls.push(['applicationProtection.authIp.set', { ...dp, ...IP_AUTH_VALUES[a.value] }]);
		else if (a.op === 'switch')
			calls.push(['applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: a.enable }]);
		else if (a.op === 'item')
			calls.push(['detection.setPolicy', { ...op, name: 'tcp_syn', type: 'tcp', ...TCP_SYN_VALUES[a.value] }]);
		else calls.push(['detection.setMode', { ...op, model: String(a.model) }]);
		for (const [op, params] of calls) {
			if (a.actor === 'n8n') await this.w.n8n.call(op, params);
			else {
				const r = await fetch(`${this.w.sim.url}/__sim/console`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ op, params }),
				});
				const j = (await r.json()) as { code?: number; msg?: string; error?: string };
				if (j.code !== 0) throw new Error(`console ${op}: ${j.error ?? j.msg}`);
			}
		}
	}

	private async drift(a: Act & { actor: 'drift' }): Promise<void> {
		const { ids } = this;
		const desired = {
			site_id: ids.site_id,
			customer_id: ids.customer_id,
			...(a.model !== undefined ? { detection: { model: a.model } } : {}),
			domain_ports: {
				[ids.domain_port_id]: {
					...(a.ipAuth !== undefined ? { ipAuth: IP_AUTH_VALUES[a.ipAuth] } : {}),
					...(a.pAuth !== undefined ? { switches: { p_auth: a.pAuth } } : {}),
				},
			},
		};
		const d = await this.w.client.workflow.start<typeof driftAudit>(WORKFLOW_TYPE.driftAudit, {
			taskQueue: this.w.queueP,
			workflowId: `drift-audit-${ids.site_id}-${this.s.seed}-${this.trace.length}`,
			args: [{ desired: desired as never, enforce: true }],
		});
		this.pending.push(d.result().catch((e) => this.errors.push(`drift: ${(e as Error).message}`)));
	}

	/** Watches the runbook: `result` its outcome (one long-poll for the whole schedule), `ended` once it settled. */
	watch(h: WorkflowHandle): void {
		this.handle = h;
		this.result = h.result();
		this.result.then(
			() => (this.ended = true),
			() => (this.ended = true),
		);
	}

	/**
	 * The gate: the runbook's phase as its search attribute (`SecsvcPhase`, upserted at every phase change), read from
	 * its history by long-poll (the server answers when an event lands, not every 400 ms as the describe it was); a
	 * closed runbook is 'done'. Before the describe it was a query: a task for the runbooks' worker, none during a kill.
	 */
	async phaseIn(phases: string[], timeoutMs = 60_000): Promise<string> {
		const { client } = this.w;
		const end = Date.now() + timeoutMs;
		const execution = { workflowId: this.handle?.workflowId };
		let nextPageToken: Uint8Array | undefined;
		while (Date.now() < end) {
			try {
				const r = await client.connection.withDeadline(end, () =>
					client.workflowService.getWorkflowExecutionHistory({
						namespace: client.options.namespace,
						execution,
						nextPageToken,
						waitNewEvent: true,
					}),
				);
				for (const e of r.history?.events ?? []) {
					if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW) continue;
					if (CLOSED.has(Number(e.eventType)) && phases.includes('done')) return 'done';
					const sa = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[SA.phase.name];
					const phase = sa?.data ? (JSON.parse(Buffer.from(sa.data).toString()) as string) : undefined;
					if (phase && phases.includes(phase)) return phase;
				}
				// no token: the run closed (a continue-as-new: its next run, from its first event)
				nextPageToken = r.nextPageToken?.length ? r.nextPageToken : undefined;
			} catch {
				// the server busy or the deadline: ask again, or give up below
				await sleep(400);
			}
		}
		return 'timeout';
	}

	/** The wait: the runbook's first attack poll on this site in the simulator's log (no Temporal call), or its end. */
	async waiting(timeoutMs = 90_000): Promise<string> {
		const end = Date.now() + timeoutMs;
		const mark = `/site/${this.ids.site_id}/`;
		while (Date.now() < end) {
			const log = this.w.sim.sim.log;
			for (; this.cursor < log.length; this.cursor++) {
				const e = log[this.cursor];
				if (e.opId === 'dashboard.isUnderAttack' && e.caller === 'app' && e.path.includes(mark)) return 'waiting';
			}
			if (this.ended) return 'ended';
			await sleep(200);
		}
		return 'timeout';
	}
}

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
import type { driftAudit } from '../../../workflows/drift/driftAudit.mts';
import type { Ids } from '../helpers.mts';
import { actText, IP_AUTH_VALUES, SOURCES, TCP_SYN_VALUES, type Act, type Anchor, type Schedule } from './schedule.mts';
import type { World } from './world.mts';

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

	/**
	 * The gate: the runbook's phase as its search attribute (`SecsvcPhase`, upserted at every phase change) in the
	 * server's describe, every 400 ms (the gate stays open until the decision); a closed runbook is 'done'. It was a
	 * query: each one a task for the runbooks' worker (with 24 schedules at once, most of them gated), and during a
	 * kill no answer at all.
	 */
	async phaseIn(phases: string[], timeoutMs = 60_000): Promise<string> {
		const end = Date.now() + timeoutMs;
		while (Date.now() < end) {
			try {
				const d = await this.handle?.describe();
				const phase = d && (d.status.name === 'RUNNING' ? d.typedSearchAttributes.get(SA.phase) : 'done');
				if (phase && phases.includes(phase)) return phase;
			} catch {
				// the server busy: ask again
			}
			await sleep(400);
		}
		return 'timeout';
	}

	/** The wait: the runbook's first attack poll on this site in the simulator's log (no Temporal call), or its end. */
	async waiting(timeoutMs = 90_000): Promise<string> {
		const end = Date.now() + timeoutMs;
		const mark = `/site/${this.ids.site_id}/`;
		for (let i = 0; Date.now() < end; i++) {
			const log = this.w.sim.sim.log;
			for (; this.cursor < log.length; this.cursor++) {
				const e = log[this.cursor];
				if (e.opId === 'dashboard.isUnderAttack' && e.caller === 'app' && e.path.includes(mark)) return 'waiting';
			}
			if (i % 5 === 4 && (await this.handle?.describe())?.status.name !== 'RUNNING') return 'ended';
			await sleep(200);
		}
		return 'timeout';
	}
}

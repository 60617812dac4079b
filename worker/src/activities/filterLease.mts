import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { KeyedMutex } from './mutex.mts';
import { claim, release } from '../../../workflows/coordinator/client.mts';
import { settingKey } from '../../../workflows/coordinator/coordination.mts';

const httpFilterMutex = new KeyedMutex();

/** The filter lease's life, renewed every 5 s while its write runs: it ends with its attempt. */
const FILTER_LEASE_TTL_S = 20;
const FILTER_RENEW_MS = 5_000;

/**
 * One HTTP-filter create/edit per domain-port at a time (§4.3.1 / §7): the coordinator's lease across processes and
 * hosts (each activity its own owner), and this process's mutex in front of the asking (without a Temporal client:
 * the mutex only).
 * The lease is asked for without waiting, again and again with a jittered backoff, rather than by a claim that waits
 * in the coordinator: a waiting claim outlives a SIGKILLed caller and is granted to nobody alive. The lease lives
 * FILTER_LEASE_TTL_S and is renewed while the write runs, and the activity heartbeats meanwhile (waiting included):
 * a killed attempt's lease lapses within 20 s (it held the domain-port's other writes 120 s) and, with the
 * workflow's heartbeat timeout, its retry starts within 10 s and re-takes its own lease at once.
 */
export async function serializedFilterWrite<T>(
	coordination: (() => TemporalClient) | undefined,
	site: string,
	dp: string,
	fn: () => Promise<T>,
): Promise<T> {
	const info = activityInfo();
	if (!coordination || !info?.workflowExecution) return httpFilterMutex.run(`${site}/${dp}`, fn);
	const temporal = coordination();
	const owner = `${info.workflowExecution.workflowId}#${info.activityId}`; // the same across the activity's retries
	const keys = [settingKey.httpFilterWrite(dp)];
	const ask = async () => {
		try {
			const r = await claim(
				temporal,
				{
					site_id: site,
					owner,
					keys,
					mode: 'lease',
					ttlSeconds: FILTER_LEASE_TTL_S,
					reason: 'HTTP-filter create/edit (§4.3.1: never concurrent)',
				},
				info.taskQueue,
			);
			return r.granted.includes(keys[0]);
		} catch (e) {
			// Temporal allows 10 in-flight Updates per workflow: many creates asking at once are asked to come back
			if (!/in-flight updates/i.test(String((e as Error)?.message))) throw e;
			return false;
		}
	};
	let held = false;
	let renewing: Promise<unknown> = Promise.resolve();
	// The same owner's claim renews its lease (a new `until`); a failed renewal is tried again 5 s later. The activity
	// heartbeats meanwhile (`beating`, writeRecord.mts): a killed attempt's lease is renewed by nobody.
	const renew = setInterval(() => {
		if (held) renewing = ask().catch(() => undefined);
	}, FILTER_RENEW_MS);
	const poll = async () => {
		for (let attempt = 0; !(held = await ask()); attempt++)
			await new Promise((r) =>
				setTimeout(r, Math.min(2000, 200 * 2 ** Math.min(attempt, 4)) * (0.5 + Math.random() / 2)),
			);
		return fn();
	};
	try {
		// Granted at once (free, or this owner's own lease: the retry of a killed attempt) it writes now; otherwise it
		// waits behind this process's other writes to the domain-port and then asks: one asker per process, not one
		// per activity (24 creates asking at once flooded the coordinator with Updates: filterKillStorm).
		if ((held = await ask())) return await fn();
		return await httpFilterMutex.run(`${site}/${dp}`, poll);
	} finally {
		clearInterval(renew);
		await renewing; // a renewal landing after the release would take the lease again
		// lapses by itself FILTER_LEASE_TTL_S after the last renewal otherwise
		if (held) await release(temporal, site, owner, keys).catch(() => undefined);
	}
}

function activityInfo(): ReturnType<typeof Context.current>['info'] | undefined {
	try {
		return Context.current().info;
	} catch {
		return undefined; // not inside an activity (direct use): this process's mutex only
	}
}

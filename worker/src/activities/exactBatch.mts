import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { getOperation } from '../../../api/catalog/index.ts';
import type { Client } from '../../../api/client.ts';
import type { ClaimResult } from '../../../workflows/coordinator/coordination.mts';
import type {
	AddEachInput,
	AddEachResult,
	WriteStep,
	WriteStepsInput,
	WriteStepsResult,
} from '../../../workflows/pure/activityNames.mts';
import { EXACT_SETTINGS, exactList, exactSet } from './exactWrites.mts';
import { askHold, entryGate, NotHeld, type AskHold } from './entriesHold.mts';
import { entryAttempts, writeAttempt } from './writeRecord.mts';

const ADD = getOperation('applicationProtection.ipBlacklist.add');

type Attempts = ReturnType<typeof entryAttempts>;
type Answer = WriteStepsResult['answers'][number];
type ToFailure = (op: string, e: unknown) => Error;
type Gate = ReturnType<typeof entryGate>;

/**
 * A runbook's blacklist adds of one domain-port in ONE activity (issue 42: one task per write group, not one per
 * entry): each entry is written as `applicationProtection.ipBlacklist.add` writes it (exactWrites.mts exactList: the
 * list read, the guard beside it, the POST only when not listed), with its own record in the activity's
 * (writeRecord.mts entryAttempts), `concurrency` at a time in the given order. A retry answers the entries an earlier
 * attempt answered from its record, sends nothing for them, and treats the one it was writing as that activity's
 * own retry would. An entry the blast-radius guard refuses is answered `refused` (nothing sent); any other failure
 * ends the activity after the entries beside it settle, with every answer so far in its details (`answers`), so the
 * runbook owns what was written even when the activity fails for good.
 */
export async function exactAddEach(
	client: Client,
	input: AddEachInput,
	temporal: (() => TemporalClient) | undefined,
	toFailure: (e: unknown) => Error,
): Promise<AddEachResult> {
	const attempts = entryAttempts(writeAttempt(temporal));
	const answers: Answer[] = [];
	const byEntry = () => answers.map(({ key, ...a }) => ({ entry: key, ...a })) as AddEachResult['answers'];
	try {
		await addEntries(
			client,
			input,
			temporal,
			attempts,
			(e) => e,
			answers,
			(_, e) => toFailure(e),
			entryGate(undefined),
		);
	} catch (e) {
		throw withAnswers(e as Error, byEntry());
	}
	return { answers: byEntry() };
}

/**
 * One list's entries, `concurrency` at a time; each answer pushed under `keyOf(entry)`. `gate`: an entry's hold beside
 * its read (entriesHold.mts); one not held is sent nothing and given no answer.
 */
async function addEntries(
	client: Client,
	input: AddEachInput,
	temporal: (() => TemporalClient) | undefined,
	attempts: Attempts,
	keyOf: (entry: string) => string,
	answers: Answer[],
	toFailure: ToFailure,
	gate: Gate,
): Promise<void> {
	const limit = Math.max(1, Math.min(16, Math.trunc(Number(input.concurrency) || 1)));
	const base = { site_id: input.site_id, domain_port_id: input.domain_port_id };
	const one = async (entry: string) => {
		const key = keyOf(entry);
		const known = attempts.earlier(key);
		if (known && 'answer' in known) return void answers.push({ key, answer: known.answer });
		try {
			const params = { ...base, ip_black_list: entry };
			const answer = await exactList(client, ADD, params, temporal, attempts.of(key), gate(key));
			attempts.answered(key, answer);
			answers.push({ key, answer });
		} catch (e) {
			if (e instanceof NotHeld) return;
			if ((e as Error)?.name !== 'BlastRadiusError') throw e;
			answers.push({ key, refused: toFailure(ADD.id, e).message });
		}
	};
	const list = Array.isArray(input.entries) ? input.entries.map(String) : [];
	for (let i = 0; i < list.length; i += limit)
		await settleGroup(list.slice(i, i + limit).map(one), attempts, ADD.id, toFailure);
}

/**
 * Waits for every write of a group; on a failure, records the answers made beside it first (a retry must not take
 * them for lost answers) and throws it as its write's activity would fail.
 */
async function settleGroup(writes: Promise<void>[], attempts: Attempts, op: string, toFailure: ToFailure) {
	const rs = await Promise.allSettled(writes);
	const failed = rs.find((r) => r.status === 'rejected');
	if (!failed) return;
	await attempts.flush().catch(() => undefined);
	const reason = (failed as PromiseRejectedResult).reason;
	throw reason instanceof StepFailure ? reason.failure : toFailure(op, reason);
}

/** A step's failure, already in its own write activity's terms. */
class StepFailure extends Error {
	constructor(readonly failure: Error) {
		super(failure.message);
	}
}

/**
 * A runbook's write groups in ONE activity (issue 42: a Temporal task round trip per run of groups, not per group):
 * the groups in order, a group's steps at once, the next group once every step of the one before has answered —
 * what the runbook's workflow did with one activity per group. Each setting is written as its own activity writes it
 * (exactSet: read, record beside the read, write only when not at the target) and each list entry as
 * `runbook.blacklistAddEach` writes it, each with its own record in this activity's (entryAttempts, keyed as the
 * answers are), so a retry answers from the record what an earlier attempt answered and sends nothing for it. A
 * failure ends the activity after the steps beside it settle, every answer so far in its details (`answers`).
 * `input.hold`: the entries' hold, asked at the start beside the first reads; each entry waits for it beside its own
 * read and is sent only once held (entriesHold.mts). `ask`: how it is asked (tests).
 */
export async function exactWriteSteps(
	client: Client,
	input: WriteStepsInput,
	temporal: (() => TemporalClient) | undefined,
	toFailure: ToFailure,
	ask: AskHold = askHold(temporal),
): Promise<WriteStepsResult<ClaimResult>> {
	const holding = input.hold ? ask(input.hold, new Date().toISOString()) : undefined;
	holding?.catch(() => undefined); // thrown by the entries that wait for it
	const gate = entryGate(holding, input.hold?.keys);
	const attempts = entryAttempts(writeAttempt(temporal));
	const answers: Answer[] = [];
	const step = async (s: WriteStep) => {
		try {
			if ('add' in s)
				return await addEntries(client, s.add, temporal, attempts, (e) => `${s.key} ${e}`, answers, toFailure, gate);
			const known = attempts.earlier(s.key);
			if (known && 'answer' in known) return void answers.push({ key: s.key, answer: known.answer });
			if (!(s.op in EXACT_SETTINGS))
				throw ApplicationFailure.nonRetryable(`${s.op}: not a setting write`, 'ValidationError', { opId: s.op });
			const answer = await exactSet(client, getOperation(s.op), s.params, temporal, undefined, attempts.of(s.key));
			attempts.answered(s.key, answer as unknown as Record<string, unknown>);
			answers.push({ key: s.key, answer });
		} catch (e) {
			// addEntries fails as the add activity would; a setting's failure as its own write activity would
			throw new StepFailure(e instanceof ApplicationFailure || 'add' in s ? (e as Error) : toFailure(s.op, e));
		}
	};
	try {
		for (const group of Array.isArray(input.groups) ? input.groups : [])
			await settleGroup(group.map(step), attempts, ADD.id, toFailure);
	} catch (e) {
		throw withAnswers(e as Error, answers);
	}
	return holding ? { answers, hold: await holding } : { answers };
}

/** The failure as the single write's activity would fail, its details followed by the answers so far. */
function withAnswers(f: Error, answers: unknown[]): Error {
	if (!(f instanceof ApplicationFailure)) return f;
	return ApplicationFailure.create({
		message: f.message,
		type: f.type ?? undefined,
		nonRetryable: f.nonRetryable === true,
		details: [...(f.details ?? []), { answers }],
	});
}

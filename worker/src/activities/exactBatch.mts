import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { getOperation } from '../../../api/catalog/index.ts';
import type { Client } from '../../../api/client.ts';
import type { AddEachInput, AddEachResult } from '../../../workflows/pure/activityNames.mts';
import { exactList } from './exactWrites.mts';
import { entryAttempts, writeAttempt } from './writeRecord.mts';

const ADD = getOperation('applicationProtection.ipBlacklist.add');

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
	const entries = entryAttempts(writeAttempt(temporal));
	const answers: AddEachResult['answers'] = [];
	const limit = Math.max(1, Math.min(16, Math.trunc(Number(input.concurrency) || 1)));
	const base = { site_id: input.site_id, domain_port_id: input.domain_port_id };
	const one = async (entry: string) => {
		const known = entries.earlier(entry);
		if (known && 'answer' in known) return void answers.push({ entry, answer: known.answer });
		try {
			const answer = await exactList(client, ADD, { ...base, ip_black_list: entry }, temporal, entries.of(entry));
			entries.answered(entry, answer);
			answers.push({ entry, answer });
		} catch (e) {
			if ((e as Error)?.name !== 'BlastRadiusError') throw e;
			answers.push({ entry, refused: toFailure(e).message });
		}
	};
	const list = Array.isArray(input.entries) ? input.entries.map(String) : [];
	for (let i = 0; i < list.length; i += limit) {
		const rs = await Promise.allSettled(list.slice(i, i + limit).map(one));
		const failed = rs.find((r) => r.status === 'rejected');
		if (!failed) continue;
		// The entries answered beside the failure are recorded first: a retry must not take them for lost answers.
		await entries.flush().catch(() => undefined);
		throw withAnswers(toFailure((failed as PromiseRejectedResult).reason), answers);
	}
	return { answers };
}

/** The failure as the single add's activity would fail, its details followed by the answers so far. */
function withAnswers(f: Error, answers: AddEachResult['answers']): Error {
	if (!(f instanceof ApplicationFailure)) return f;
	return ApplicationFailure.create({
		message: f.message,
		type: f.type ?? undefined,
		nonRetryable: f.nonRetryable === true,
		details: [...(f.details ?? []), { answers }],
	});
}

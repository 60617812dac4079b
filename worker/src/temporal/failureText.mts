/**
 * The root cause of a failure, for people: the chain of causes (workflow → activity → application failure), the
 * innermost message last, without Temporal's generic wrappers ("Workflow execution failed", "Activity task failed")
 * when a cause says more. Bounded to 2000 characters.
 */
export function failureText(e: unknown): string {
	const msgs: string[] = [];
	const seen = new Set<unknown>();
	for (
		let c: unknown = e;
		c && typeof c === 'object' && !seen.has(c) && msgs.length < 8;
		c = (c as { cause?: unknown }).cause
	) {
		seen.add(c);
		const m = String((c as Error).message ?? '').trim();
		const details = (c as { details?: unknown }).details;
		if (m) msgs.push(m);
		else if (typeof details === 'string' && details) msgs.push(details);
	}
	const generic =
		/^(Workflow execution failed|Activity task failed|Child Workflow execution failed|Failed to start Workflow|Workflow execution timed out|Workflow execution terminated)\.?$/i;
	const useful = msgs.filter((m) => !generic.test(m));
	const text = (useful.length ? useful[useful.length - 1] : msgs[0]) ?? String(e);
	const head = msgs[0] && useful.length && msgs[0] !== text ? `${msgs[0].replace(/\.$/, '')}: ` : '';
	const all = head + text;
	return all.length > 2000 ? `${all.slice(0, 1999)}…` : all;
}

/**
 * Load-independent counts for bench 3 (issue 42), from a run's marks (bench/ttmSteps.mts): how many API round trips
 * follow one another up to the last mitigation write, and how many Temporal tasks the runbook and its site
 * coordinator took to get there.
 */

export interface Mark {
	at: number;
	what: string;
}

/**
 * The longest chain of API requests each sent after the one before it was answered (`delayMs` after its arrival): the
 * sequential round trips. Requests are the simulator's arrival times; with +20 ms or more a dependent request cannot
 * arrive sooner, and requests sent at once arrive within a few ms of each other.
 */
export function apiChain(arrivals: number[], delayMs: number): number {
	const at = [...arrivals].sort((a, b) => a - b);
	const depth: number[] = [];
	for (let j = 0; j < at.length; j++) {
		let d = 1;
		for (let i = 0; i < j; i++) if (at[j] >= at[i] + delayMs) d = Math.max(d, depth[i] + 1);
		depth.push(d);
	}
	return Math.max(0, ...depth);
}

/** Temporal tasks in the marks (up to the last mitigation write): workflow tasks, activities, local activities. */
export function taskCounts(marks: Mark[]): Record<string, number> {
	const n = (re: RegExp) => marks.filter((m) => re.test(m.what)).length;
	return {
		'runbook workflow tasks': n(/^WorkflowTaskCompleted$/),
		'runbook activity tasks': n(/^activity scheduled /),
		'runbook local activities (markers)': n(/^(LA |marker)/),
		'coordinator workflow tasks': n(/^ +coordinator WorkflowTaskCompleted$/),
		'coordinator Updates': n(/^ +coordinator WorkflowExecutionUpdateCompleted$/),
	};
}

import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

/**
 * Per-item parameter reading without re-evaluating what cannot change from item to item.
 *
 * n8n's getNodeParameter(name, i) evaluates the parameter for item i every time: a deep copy, and for expressions a
 * call into n8n's expression sandbox, the largest single cost of a run over many items (docs/benchmarks.md, bench
 * 2). This reader looks at each parameter's raw value once per execution:
 *
 *   - no expression anywhere in it (e.g. resource, operation, a fixed ID) → the value is read once, through
 *     getNodeParameter (so n8n's own checks still apply), and reused for every item;
 *   - exactly `={{ $json.a.b }}` / `={{ $json["a"][0] }}` (the form n8n's drag-and-drop mapping writes) → read from
 *     the item's own JSON, `$json` being that item (n8n defines it the same way), when every step of the path is an
 *     own property; objects are copied; a missing step leaves the item to n8n's evaluator;
 *   - anything else → n8n evaluates it per item, as before.
 *
 * The same values come out either way (test/n8n/inprocess.test.mts runs both paths through the real n8n engine and
 * compares them).
 */
export type ItemParamReader = (name: string, itemIndex: number, fallback?: unknown) => unknown;

type Plan =
	| { kind: 'constant'; value: unknown }
	| { kind: 'json'; path: Array<string | number> }
	| { kind: 'evaluate' };

const TRIVIAL = /^=\{\{\s*\$json((?:\.[A-Za-z_$][\w$]*|\[(?:'[^'\\\n]*'|"[^"\\\n]*"|\d+)\])+)\s*\}\}$/;
const SEGMENT = /\.([A-Za-z_$][\w$]*)|\[(?:'([^'\\\n]*)'|"([^"\\\n]*)"|(\d+))\]/g;

/** Whether a raw parameter value holds an n8n expression anywhere (a string starting with '='). */
export function hasExpression(raw: unknown): boolean {
	if (typeof raw === 'string') return raw.startsWith('=');
	if (Array.isArray(raw)) return raw.some(hasExpression);
	if (raw !== null && typeof raw === 'object') return Object.values(raw as Record<string, unknown>).some(hasExpression);
	return false;
}

/** The property path of a `={{ $json… }}` expression, or undefined when the expression is anything else. */
export function trivialJsonPath(raw: string): Array<string | number> | undefined {
	const m = TRIVIAL.exec(raw);
	if (!m) return undefined;
	const path: Array<string | number> = [];
	for (const s of m[1].matchAll(SEGMENT)) {
		if (s[1] !== undefined) path.push(s[1]);
		else if (s[2] !== undefined) path.push(s[2]);
		else if (s[3] !== undefined) path.push(s[3]);
		else path.push(Number(s[4]));
	}
	// `$json.constructor`, `__proto__` and the like are left to n8n.
	if (path.some((k) => typeof k === 'string' && (k === '__proto__' || k === 'constructor' || k === 'prototype')))
		return undefined;
	return path;
}

function copy(value: unknown): unknown {
	return value !== null && typeof value === 'object' ? structuredClone(value) : value;
}

const UNSURE = Symbol('unsure');

/** The value at an own-property path of the item's JSON; UNSURE when any step is missing or not an object/array. */
function valueAt(json: IDataObject | undefined, path: Array<string | number>): unknown {
	let cur: unknown = json;
	for (const k of path) {
		if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, k)) return UNSURE;
		cur = (cur as Record<string | number, unknown>)[k];
	}
	return cur;
}

export function createParamReader(exec: IExecuteFunctions, items: INodeExecutionData[]): ItemParamReader {
	const plans = new Map<string, Plan>();
	const missing = Symbol('missing');
	const planFor = (name: string): Plan => {
		let plan = plans.get(name);
		if (plan) return plan;
		plan = { kind: 'evaluate' };
		if (items.length > 0) {
			const raw: unknown = exec.getNodeParameter(name, 0, missing, { rawExpressions: true });
			if (raw === missing) plan = { kind: 'constant', value: missing };
			else if (!hasExpression(raw)) plan = { kind: 'constant', value: exec.getNodeParameter(name, 0, missing) };
			else if (typeof raw === 'string') {
				const path = trivialJsonPath(raw);
				if (path) plan = { kind: 'json', path };
			}
		}
		plans.set(name, plan);
		return plan;
	};
	return (name, itemIndex, fallback = null) => {
		const plan = planFor(name);
		if (plan.kind === 'constant') return plan.value === missing ? fallback : copy(plan.value);
		if (plan.kind === 'json') {
			// Only a plain walk over the item's own properties is taken here; anything else (a missing key, a string's
			// .length, …) is n8n's to answer.
			const value = valueAt(items[itemIndex]?.json, plan.path);
			if (value !== UNSURE) return copy(value);
		}
		return exec.getNodeParameter(name, itemIndex, fallback);
	};
}

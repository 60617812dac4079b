/**
 * Redaction of secrets. `access_token`, `secret`, `refresh_token` and `code` values are masked in any text
 * (query strings, form bodies, JSON) and in any object, and every value registered with `registerSecret`
 * is masked wherever it appears.
 */

const MASK = '***';
const SECRET_KEYS = [
	'access_token',
	'secret',
	'refresh_token',
	'code',
	'app_secret',
	'authorization',
	'apiKey',
	'api_key',
];
const KEY_ALT = SECRET_KEYS.join('|');
// key=value (query/form), "key":"value" (JSON), key: value (logs)
const PATTERNS = [
	new RegExp(`((?:^|[?&\\s,;{(])(?:${KEY_ALT})=)[^&\\s#"',;)]+`, 'gi'),
	new RegExp(`("(?:${KEY_ALT})"\\s*:\\s*")[^"]*`, 'gi'),
	new RegExp(`('(?:${KEY_ALT})'\\s*:\\s*')[^']*`, 'gi'),
];

const known = new Set<string>();

/** Remembers a secret value so it is masked wherever it appears (in any field name or free text). */
export function registerSecret(value: string | undefined): void {
	if (value && value.length >= 4) known.add(value);
}

export function redactText(text: string): string {
	let out = text;
	for (const re of PATTERNS) out = out.replace(re, `$1${MASK}`);
	for (const s of known) if (out.includes(s)) out = out.split(s).join(MASK);
	return out;
}

function isSecretKey(k: string): boolean {
	const l = k.toLowerCase();
	return SECRET_KEYS.some((s) => s.toLowerCase() === l);
}

/** Deep copy with secret keys masked and secret values removed from strings. */
export function redactDeep<T>(value: T, seen = new WeakSet<object>()): T {
	if (typeof value === 'string') return redactText(value) as T;
	if (value === null || typeof value !== 'object') return value;
	if (seen.has(value as object)) return '[Circular]' as T;
	seen.add(value as object);
	if (Array.isArray(value)) return value.map((v) => redactDeep(v, seen)) as T;
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
		out[k] = isSecretKey(k) && v !== undefined && v !== null && v !== '' ? MASK : redactDeep(v, seen);
	}
	return out as T;
}

/**
 * Text from a runbook, a block or a hold (site ids, reasons, audit entries: anyone who can start a workflow or send a
 * signal writes them) printed to a terminal by the CLI: control characters — C0 (ESC, CR, LF …), DEL, C1, the Unicode
 * line / paragraph separators and bidi overrides — are shown as escapes (`\n`, `\u001b`), so a value can neither clear
 * the screen nor forge a line of its own. JSON output (`--json`) is escaped by JSON itself.
 */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function printable(v: unknown): string {
	return String(v ?? '').replace(CONTROLS, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

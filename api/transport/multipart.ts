/**
 * A multipart/form-data body of text parts, built by hand: every host (undici in the worker, n8n's request helpers)
 * sends the same bytes, without a runtime dependency, rebuilt from the parts on every attempt (never a consumed
 * stream). The boundary is new per body (a random prefix drawn once, then a counter) and appears in no part.
 */

const PREFIX = `----secsvc${Date.now().toString(36)}${Math.floor(Math.random() * 1e9).toString(36)}`;
let boundaryCounter = 0;

export function multipartBody(parts: Array<[string, string]>): { body: string; contentType: string } {
	let boundary = '';
	do boundary = `${PREFIX}${(++boundaryCounter).toString(36)}`;
	while (appearsIn(parts, boundary));
	let body = '';
	for (const [name, value] of parts)
		body += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"\r\n\r\n${value}\r\n`;
	body += `--${boundary}--\r\n`;
	return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A name's quote and line breaks would end its header: escaped (only when there is one). */
const escapeName = (s: string) => (/["\r\n]/.test(s) ? s.replace(/"/g, '%22').replace(/\r|\n/g, ' ') : s);

/** Whether a part's name or value holds `s` (a function of its own: no closure over the boundary per body). */
function appearsIn(parts: Array<[string, string]>, s: string): boolean {
	for (const [k, v] of parts) if (k.includes(s) || v.includes(s)) return true;
	return false;
}

/**
 * Body decoders: multipart/form-data (a small parser; repeated names become several values),
 * application/x-www-form-urlencoded and query strings.
 */

export type Fields = Map<string, string[]>;

function add(m: Fields, k: string, v: string) {
	const a = m.get(k);
	if (a) a.push(v);
	else m.set(k, [v]);
}

/** Query string / urlencoded body -> name -> values. `+` is a space, as in forms. */
export function parseUrlEncoded(s: string): Fields {
	const m: Fields = new Map();
	if (!s) return m;
	for (const pair of s.split('&')) {
		if (!pair) continue;
		const i = pair.indexOf('=');
		const k = i < 0 ? pair : pair.slice(0, i);
		const v = i < 0 ? '' : pair.slice(i + 1);
		add(m, dec(k), dec(v));
	}
	return m;
}

function dec(s: string): string {
	if (s.indexOf('+') >= 0) s = s.replace(/\+/g, ' ');
	if (s.indexOf('%') < 0) return s;
	try {
		return decodeURIComponent(s);
	} catch {
		return s;
	}
}

/** Boundary of a multipart content type, or undefined. */
export function boundaryOf(contentType: string): string | undefined {
	const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
	return m ? (m[1] ?? m[2]) : undefined;
}

export class MultipartError extends Error {}

/**
 * Parses a multipart/form-data body. Each part needs `Content-Disposition: form-data; name="…"`.
 * File parts are read as text (the API has no file fields).
 */
export function parseMultipart(body: Buffer, boundary: string): Fields {
	const m: Fields = new Map();
	const delim = Buffer.from(`--${boundary}`);
	let pos = body.indexOf(delim);
	if (pos < 0) {
		if (body.length === 0) return m;
		throw new MultipartError('multipart body has no boundary line');
	}
	for (;;) {
		pos += delim.length;
		// "--" after the delimiter closes the body.
		if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return m;
		if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
		else throw new MultipartError('malformed multipart delimiter line');
		const headEnd = body.indexOf('\r\n\r\n', pos);
		if (headEnd < 0) throw new MultipartError('multipart part without header end');
		const head = body.subarray(pos, headEnd).toString('utf8');
		const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delim]), headEnd + 4);
		if (next < 0) throw new MultipartError('multipart body not terminated');
		const value = body.subarray(headEnd + 4, next).toString('utf8');
		const disp = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(head);
		const name = disp ? (/\bname="([^"]*)"/i.exec(disp[1]) ?? /\bname=([^;\s]+)/i.exec(disp[1])) : null;
		if (!name) throw new MultipartError('multipart part without a form-data name');
		add(m, name[1], value);
		pos = next + 2;
	}
}

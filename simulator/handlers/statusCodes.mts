/** §4.3.4 status-code overwrites (error pages): create / list / update / delete. */
import { CODES } from '../codes.mts';
import { Input, SimError, notFound } from '../util.mts';
import { type HandlerDef, deep, ap, apGet } from './shared.mts';

function isHttpUrl(s: string): boolean {
	try {
		const u = new URL(s);
		return u.protocol === 'http:' || u.protocol === 'https:';
	} catch {
		return false;
	}
}

const OVERWRITABLE = (c: number) => (c >= 400 && c <= 417) || (c >= 500 && c <= 505);
// ---------------------------------------------------------------- status codes (§4.3.4)

function readStatusCode(b: Input) {
	const error_code = b.int('error_code', true);
	if (error_code !== undefined && !OVERWRITABLE(error_code))
		b.issue('error_code', 'must be an HTTP code from 400 to 417 or from 500 to 505');
	const error_code_rewrite = b.int('error_code_rewrite', true, 100, 999);
	const error_page_type = b.intOneOf('error_page_type', [0, 1, 2], true);
	const error_page_info = b.str('error_page_info');
	if (error_page_type === 2) {
		if (error_page_info === undefined)
			b.issue('error_page_info', 'is required when error_page_type is 2 (custom page by URL)');
		else if (!isHttpUrl(error_page_info))
			b.issue('error_page_info', 'must be an http(s) URL when error_page_type is 2');
	}
	return {
		error_code: error_code as number,
		error_code_rewrite: error_code_rewrite as number,
		error_page_type: error_page_type as number,
		error_page_info: error_page_info ?? '',
	};
}

export const statusCodes: Record<string, HandlerDef> = {
	'applicationProtection.statusCodes.create': ap((_s, c, p) => {
		const e = readStatusCode(c.b);
		c.done();
		if (p.statusCodes.error_page.some((x) => x.error_code === e.error_code))
			throw new SimError(
				CODES.CONFLICT_EXISTS,
				`error_code: an overwrite entry for ${e.error_code} already exists (use PUT to edit it)`,
			);
		p.statusCodes.error_page.push(e);
		return undefined;
	}, 'multipart'),
	'applicationProtection.statusCodes.list': apGet((p) => deep(p.statusCodes)),
	'applicationProtection.statusCodes.update': ap((_s, c, p) => {
		const e = readStatusCode(c.b);
		c.done();
		const i = p.statusCodes.error_page.findIndex((x) => x.error_code === e.error_code);
		if (i < 0) throw notFound(`error_code: no overwrite entry for ${e.error_code}`);
		p.statusCodes.error_page[i] = e;
		return undefined;
	}, 'multipart'),
	'applicationProtection.statusCodes.delete': ap((_s, c, p) => {
		const code = c.q.int('error_code', true);
		if (code !== undefined && !OVERWRITABLE(code))
			c.q.issue('error_code', 'must be an HTTP code from 400 to 417 or from 500 to 505');
		c.done();
		const i = p.statusCodes.error_page.findIndex((x) => x.error_code === code);
		if (i < 0) throw notFound(`error_code: no overwrite entry for ${code}`);
		p.statusCodes.error_page.splice(i, 1);
		return undefined;
	}),
};

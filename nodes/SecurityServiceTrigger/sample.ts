import type { IDataObject } from 'n8n-workflow';
import { errorText, fieldWords, hasOperationWords, operationTitle, triggerText } from '../../api/catalog/labels';
import { SecurityServiceError, ValidationError } from '../../api/errors';
import type { EventKind } from './poll';

/**
 * Fetch Test Event when the site has no event to show: an item of the same shape as a real one, marked
 * `sample: true`, with documentation addresses only (RFC 5737), so the next nodes can be mapped.
 */
export function sampleItem(event: EventKind, site: string, domainPorts: string): IDataObject {
	const now = Math.floor(Date.now() / 1000);
	const iso = (t: number) => new Date(t * 1000).toISOString();
	const base: IDataObject = {
		sample: true,
		test_event: true,
		test_note: triggerText.sample(event),
		site_id: site,
		event,
	};
	if (event === 'newFlowDownAlert')
		return {
			...base,
			alert_id: 'sample',
			start_time: now - 600,
			start_time_iso: iso(now - 600),
			end_time: 0,
			status: 0,
		};
	const dps = domainPorts.split(',').filter(Boolean);
	const item: IDataObject = {
		...base,
		alert_id: 'sample',
		site_ip: '192.0.2.10',
		site_name: 'sample site',
		attack_type: 'TCP SYN',
		max_bps: 12_000_000_000,
		max_pps: 3_000_000,
		severity: 1,
		severity_name: 'medium',
		status: event === 'attackStopped' ? 0 : 1,
		start_time: now - 600,
		start_time_iso: iso(now - 600),
		end_time: event === 'attackStopped' ? now - 60 : 0,
		...(event === 'attackStopped' ? { end_time_iso: iso(now - 60) } : {}),
	};
	if (event !== 'attackStarted') return item;
	return {
		...base,
		attacking_ranges: ['198.51.100.7', '198.51.100.9'],
		attacking_sources: ['198.51.100.7', '198.51.100.9'],
		domain_port_ids: dps,
		...(dps.length ? { domain_port_id: dps[0] } : {}),
		...item,
		top_sources: [
			{ ip: '198.51.100.7', bps: 6_000_000_000 },
			{ ip: '198.51.100.9', bps: 4_000_000_000 },
		],
	};
}

/** A poll's error in the user's words: the operation's title and the field's label, never an internal id. */
export function triggerError(error: unknown): { message: string; description?: string } {
	if (error instanceof ValidationError) {
		const opId = error.opId;
		const issues = error.issues
			.map((i) => errorText.issue(i.field === 'site_id' ? 'Site IDs' : fieldWords(opId, i.field).label, i.rule))
			.join('; ');
		return {
			message: triggerText.readFailed(hasOperationWords(opId) ? operationTitle(opId) : 'Security Service', issues),
		};
	}
	if (error instanceof SecurityServiceError) {
		const opId = error.opId;
		const title = hasOperationWords(opId) ? operationTitle(opId) : 'Security Service';
		// The service's answer with its `site_id:` in the trigger's words; no internal operation id anywhere.
		const why = error.message.replace(/^[\w.]+: /, '').replace(/\bsite_id: /g, 'Site IDs: ');
		return { message: triggerText.readFailed(title, why) };
	}
	return { message: error instanceof Error ? error.message : String(error) };
}

import type { INodeProperties } from 'n8n-workflow';
import { catalog } from '../../../api/catalog/index';
import { errorText } from '../../../api/catalog/labels';
import { tokenSourceProperty } from '../credentialSlots';
import { buildProperties } from './resources';

/** The writes a test event may stop (token operations act on the credential, never on an event). */
const WRITE_ACTIONS = [
	...new Set(catalog.filter((op) => op.safety !== 'read' && op.resource !== 'authorization').map((op) => op.action)),
];

/** Shown on every write: lets a write act on an item the trigger's Fetch Test Event marked `test_event: true`. */
export const TEST_EVENT_PARAM = 'writeOnTestEvent';

/** Version 1 parameters: generated from the endpoint catalog (resource → operation → fields). */
export const versionProperties: INodeProperties[] = [
	...buildProperties(),
	{
		displayName: 'Write on Test Events',
		name: TEST_EVENT_PARAM,
		type: 'boolean',
		default: false,
		description: errorText.testEventOption,
		displayOptions: { show: { operation: WRITE_ACTIONS } },
	},
	// Last: rarely changed, and the field the user came to give stays first.
	tokenSourceProperty,
];

import type { INodeProperties } from 'n8n-workflow';

/**
 * The node parameter that shows the Security Service node's and trigger's Temporal credential slot (the slots
 * themselves are written in each node file, where n8n's lint reads their `testedBy`). The Temporal API credential is needed only when the
 * Security Service credential's token comes from the cluster's token owner, so its slot is shown only when the node's
 * Token Source says so (n8n shows a credential slot by node parameters, never by another credential's fields); each
 * slot has its own label, so the editor no longer shows two fields called "Credential" and never pre-selects the
 * Temporal one for a node that does not need it. A credential whose Token Source is the cluster on a node left at
 * "This Credential" is refused by name (transport/clusterToken.ts).
 */
export const TOKEN_SOURCE = 'tokenSource';

export const tokenSourceProperty: INodeProperties = {
	displayName: 'Token Source',
	name: TOKEN_SOURCE,
	type: 'options',
	noDataExpression: true,
	options: [
		{
			name: 'This Credential',
			value: 'credential',
			description: 'The Security Service credential obtains and renews its own token',
		},
		{
			name: "From the Cluster's Token Owner (Temporal)",
			value: 'cluster',
			description:
				"The credential's Token Source is the cluster: the token comes from the customer's tenant workflow, read with a Temporal API credential",
		},
	],
	default: 'credential',
	description: "As the Security Service credential's own Token Source says",
};

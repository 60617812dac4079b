import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { Client } from '../../../../api/client';
import type { CatalogEntry } from '../../../../api/catalog/types';

export interface OperationContext {
	exec: IExecuteFunctions;
	client: Client;
	op: CatalogEntry;
	/** Catalog parameters collected from the node (not yet validated). */
	params: Record<string, unknown>;
	itemIndex: number;
	returnAll: boolean;
	limit: number;
}

/** An operation returns the JSON of its output items (one per list entry, or one for the result). */
export type OperationFn = (ctx: OperationContext) => Promise<IDataObject[]>;

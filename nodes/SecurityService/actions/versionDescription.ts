import type { INodeProperties } from 'n8n-workflow';
import { buildProperties } from './resources';

/** Version 1 parameters: generated from the endpoint catalog (resource → operation → fields). */
export const versionProperties: INodeProperties[] = buildProperties();

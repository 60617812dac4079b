/**
 * Bundled into the workflow code of UNVERSIONED workers only (SECSVC_WORKER_VERSIONING=0, clusters without Worker
 * Deployments; bundle.mts adds it as a workflow interceptor module): the SDK fails every workflow task of a workflow
 * that declares a versioning behaviour when the worker has no deployment version, and every type declares one
 * (workflows/index.mts).
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import * as workflows from '../../../workflows/index.mts';

for (const wf of Object.values(workflows))
	if (typeof wf === 'function') setWorkflowOptions({}, wf as (...args: never[]) => Promise<unknown>);

export const interceptors = () => ({});

/**
 * Bundled into the workflow code of UNVERSIONED workers only (SECSVC_WORKER_VERSIONING=0, clusters without Worker
 * Deployments; bundle.mts adds it as a workflow interceptor module): the SDK fails every workflow task of a workflow
 * that declares a versioning behaviour when the worker has no deployment version, and attackResponse declares PINNED.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { attackResponse } from '../../workflows/attackResponse.mts';

setWorkflowOptions({}, attackResponse);

export const interceptors = () => ({});

/** Workflow entry point for the worker's bundle: every export here is a workflow type. */
export { attackResponse } from './attackResponse.mts';

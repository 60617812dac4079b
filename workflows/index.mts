/** Workflow entry point for the worker's bundle: every export here is a workflow type. */
export { attackResponse } from './attackResponse.mts';
export { attackWatch } from './attackWatch.mts';
export { driftAudit } from './driftAudit.mts';
export { attackReport } from './attackReport.mts';
export { siteCoordinator } from './siteCoordinator.mts';
export { durableCall } from './durableCall.mts';
export { fleetWatch } from './fleetWatch.mts';
export { blocks } from './blocks.mts';

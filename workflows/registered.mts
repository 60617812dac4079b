// Every workflow type the worker registers: the export name is the type name (api/runbook/contract.ts WORKFLOW_TYPE)
// that recorded histories carry; index.mts (the bundle entry) re-exports them with their records' versioning.
export { attackResponse } from './attackResponse/attackResponse.mts';
export { attackReport } from './report/attackReport.mts';
export { attackWatch } from './attackWatch/attackWatch.mts';
export { blocks } from './blocks/blocks.mts';
export { offenders } from './blocks/offenders.mts';
export { driftAudit } from './drift/driftAudit.mts';
export { durableCall } from './durableCall/durableCall.mts';
export { fleetWatch } from './fleet/fleetWatch.mts';
export { rateBudget } from './rateBudget/rateBudget.mts';
export { siteCoordinator } from './coordinator/siteCoordinator.mts';
export { tenant } from './tenant/tenant.mts';

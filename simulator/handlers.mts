/** The simulator's operation handlers live in simulator/handlers/, one file per resource (index.mts merges them). */
export { handlers, Redirect, type Ctx, type Encoding, type HandlerDef } from './handlers/index.mts';
export { isOngoing } from './attacks.mts';

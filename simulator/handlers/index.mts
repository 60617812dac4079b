/**
 * One handler per operation id, one file per resource. Request decoding and every rule check are the simulator's
 * own, written from the spec text (nothing is taken from api/catalog beyond id/method/path in router.mts).
 */
import { applicationProtection } from './applicationProtection.mts';
import { authorization } from './authorization.mts';
import { customers } from './customers.mts';
import { dashboard } from './dashboard.mts';
import { detection } from './detection.mts';
import { httpFilter } from './httpFilter.mts';
import { ipLists } from './ipLists.mts';
import { overview } from './overview.mts';
import type { HandlerDef } from './shared.mts';
import { statusCodes } from './statusCodes.mts';

export { Redirect, type Ctx, type Encoding, type HandlerDef } from './shared.mts';

export const handlers: Record<string, HandlerDef> = {
	...authorization,
	...customers,
	...applicationProtection,
	...httpFilter,
	...ipLists,
	...statusCodes,
	...dashboard,
	...detection,
	...overview,
};

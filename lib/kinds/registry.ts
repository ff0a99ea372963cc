import type { KindName } from '../core/run-target.ts';
import { healthCheckKind } from './healthcheck.ts';
import { khcheckKind } from './khcheck.ts';
import { khjobKind } from './khjob.ts';
import type { Kind } from './kind.ts';

/** The three kinds khrun runs, by name: the one place a kind is chosen. */
export const KINDS: Readonly<Record<KindName, Kind>> = {
  khcheck: khcheckKind,
  khjob: khjobKind,
  healthcheck: healthCheckKind,
};

export function kindOf(name: KindName): Kind {
  return KINDS[name];
}

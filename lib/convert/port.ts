import type { JsonObject } from './field-path.ts';
import type { CheckKind } from './kinds.ts';

/**
 * What `khrun convert` needs from a cluster: read the checks to convert, create the converted ones. The
 * real one is convert-kube.ts; the command's unit tests pass a fake.
 */
export interface ConvertKube {
  /** One resource; null when it does not exist. */
  get(kind: CheckKind, namespace: string, name: string): Promise<JsonObject | null>;
  /** Every resource of the kind in one namespace, or in all (namespace undefined). */
  list(kind: CheckKind, namespace: string | undefined): Promise<JsonObject[]>;
  /**
   * Creates the resource in its namespace; with dryRun the API server validates, defaults and prunes it
   * as it would store it, and stores nothing. Returns the object as the API server answered.
   */
  create(kind: CheckKind, resource: JsonObject, dryRun: boolean): Promise<JsonObject>;
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type { NamespaceScope } from '../kube/scope.ts';

/**
 * The run trigger's gate: Kuberhealthy v3's `POST /api/run?namespace=NS&healthcheck=NAME`, decided from the
 * request alone. Everything a hostile caller can send is judged here, before any API call, any file read
 * or any run: the method, the credential, then the parameters, then the namespaces this endpoint serves.
 * The credential comes before the parameters so that a caller without it learns nothing and costs nothing:
 * every request without the right token gets the same 401, whatever else it holds.
 */

/** The path the trigger answers at (Kuberhealthy v3's). */
export const TRIGGER_PATH = '/api/run';

/**
 * How callers prove who they are. `bearer`: `Authorization: Bearer <token>`, compared in constant time.
 * `iam`: the platform authenticated the caller before the request got here (a Lambda function URL with
 * AuthType AWS_IAM); the adapter confirms that it did, the gate checks no token.
 */
export type TriggerAuth = { kind: 'bearer'; token: string } | { kind: 'iam' };

export interface GateConfig {
  auth: TriggerAuth;
  /** The namespaces whose checks may be triggered here: the server's own scope. */
  scope: NamespaceScope;
  /** Whether `wait=true` may be asked for (the Lambda cannot wait for a run it hands off). */
  canWait: boolean;
  /**
   * The clusters this endpoint triggers runs in, when it serves several (docs/multi-cluster.md): `cluster`
   * is then required and must be one of them. Absent: one cluster, and `cluster` is an unknown parameter.
   */
  clusters?: readonly string[];
}

export interface TriggerRequest {
  method: string;
  /** The raw query string, without the leading `?`. */
  query: string;
  /** The Authorization header as received (undefined when absent). */
  authorization: string | undefined;
}

export interface TriggerTarget {
  namespace: string;
  checkName: string;
  /** The caller asked for the outcome in the answer (`wait=true`). */
  wait: boolean;
  /** The cluster to run it in, on an endpoint that serves several. */
  cluster?: string;
}

export type GateStatus = 400 | 401 | 403 | 405;

export type GateDecision =
  | { ok: true; target: TriggerTarget }
  | { ok: false; status: GateStatus; reason: string; headers: Record<string, string> };

/** The query parameters the trigger takes: `healthcheck` is v3's name for the check, `check` is khrun's. */
export const TRIGGER_PARAMS = ['namespace', 'healthcheck', 'check', 'wait'] as const;
/** The parameter that names the cluster, on an endpoint that serves several. */
export const CLUSTER_PARAM = 'cluster';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Bounds the work done on a query before it is refused (Node already caps the request line at 16 KiB). */
const MAX_QUERY_CHARS = 1_024;
const REALM = 'Bearer realm="khrun"';

/**
 * Whether the bearer token the caller sent is the configured one, in time that depends on neither
 * token's content nor length: both are hashed to 32 bytes first, so timingSafeEqual compares equal
 * lengths and a wrong length is not answered faster than a wrong byte.
 */
export function tokenMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  const same = timingSafeEqual(a, b);
  // An empty token is never a credential (the configuration refuses one; this is the last line).
  return same && expected.length > 0;
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +([^\s]+) *$/i.exec(header ?? '');
  return match?.[1];
}

const refuse = (status: GateStatus, reason: string, headers: Record<string, string> = {}): GateDecision => ({
  ok: false,
  status,
  reason,
  headers,
});

/** The decision for one request to the trigger; pure, and cheap for every input. */
export function gateTrigger(config: GateConfig, req: TriggerRequest): GateDecision {
  if (req.method !== 'POST') {
    return refuse(405, `use POST: ${TRIGGER_PATH} starts a run`, { allow: 'POST' });
  }
  if (config.auth.kind === 'bearer') {
    const token = bearerToken(req.authorization);
    if (token === undefined) {
      return refuse(401, 'send the trigger token as "Authorization: Bearer <token>"', {
        'www-authenticate': REALM,
      });
    }
    if (!tokenMatches(token, config.auth.token)) {
      return refuse(401, 'the bearer token is not the trigger token', {
        'www-authenticate': `${REALM}, error="invalid_token"`,
      });
    }
  }
  const params = parseParams(req.query, config.canWait, config.clusters);
  if (!params.ok) return params;
  const { namespace } = params.target;
  if (config.scope !== 'all' && !config.scope.namespaces.includes(namespace)) {
    return refuse(
      403,
      `namespace ${namespace} is not served here (this endpoint serves ${config.scope.namespaces.join(', ')})`,
    );
  }
  return params;
}

function parseParams(query: string, canWait: boolean, clusters?: readonly string[]): GateDecision {
  if (query.length > MAX_QUERY_CHARS) {
    return refuse(400, `the query is over ${MAX_QUERY_CHARS} characters`);
  }
  const params = new URLSearchParams(query);
  const values = new Map<string, string>();
  for (const [key, value] of params) {
    if (!(TRIGGER_PARAMS as readonly string[]).includes(key) && !(clusters && key === CLUSTER_PARAM)) {
      return refuse(
        400,
        `unknown parameter ${JSON.stringify(key.slice(0, 40))}; ${usage(canWait, clusters)}`,
      );
    }
    if (values.has(key)) return refuse(400, `parameter ${key} is given more than once`);
    values.set(key, value);
  }
  const namespace = values.get('namespace');
  if (namespace === undefined || namespace === '') {
    return refuse(400, `the namespace is required; ${usage(canWait, clusters)}`);
  }
  if (namespace.length > 63 || !DNS1123_LABEL.test(namespace)) {
    return refuse(
      400,
      `namespace ${JSON.stringify(namespace.slice(0, 80))} is not a namespace name (lower-case letters, digits and "-", at most 63)`,
    );
  }
  const healthcheck = values.get('healthcheck');
  const check = values.get('check');
  if (healthcheck !== undefined && check !== undefined && healthcheck !== check) {
    return refuse(400, 'healthcheck and check name different checks; give one of them');
  }
  const checkName = healthcheck ?? check;
  if (checkName === undefined || checkName === '') {
    return refuse(400, `the check is required; ${usage(canWait, clusters)}`);
  }
  if (checkName.length > 253 || !DNS1123_SUBDOMAIN.test(checkName)) {
    return refuse(
      400,
      `check ${JSON.stringify(checkName.slice(0, 80))} is not a khcheck name (lower-case letters, digits, "-" and ".")`,
    );
  }
  const wait = parseWait(values.get('wait'));
  if (wait === undefined) return refuse(400, 'wait must be true or false');
  if (wait && !canWait) {
    return refuse(
      400,
      'this endpoint cannot wait for the outcome; read it from the status (GET /json) instead',
    );
  }
  if (!clusters) return { ok: true, target: { namespace, checkName, wait } };
  const cluster = values.get(CLUSTER_PARAM);
  if (cluster === undefined || cluster === '') {
    return refuse(
      400,
      `the cluster is required here (one of ${clusters.join(', ')}); ${usage(canWait, clusters)}`,
    );
  }
  if (!clusters.includes(cluster)) {
    return refuse(
      400,
      `cluster ${JSON.stringify(cluster.slice(0, 80))} is not served here (this endpoint serves ${clusters.join(', ')})`,
    );
  }
  return { ok: true, target: { namespace, checkName, wait, cluster } };
}

function parseWait(text: string | undefined): boolean | undefined {
  if (text === undefined || text === '' || text === 'false' || text === '0') return false;
  if (text === 'true' || text === '1') return true;
  return undefined;
}

function usage(canWait: boolean, clusters?: readonly string[]): string {
  return `POST ${TRIGGER_PATH}?${clusters ? 'cluster=CLUSTER&' : ''}namespace=NS&healthcheck=NAME${canWait ? '[&wait=true]' : ''}`;
}

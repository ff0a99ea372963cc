import type { V1Container, V1ObjectFieldSelector, V1Pod } from '@kubernetes/client-node';

/** Decoded data of ConfigMaps and Secrets by name; `undefined` means the object does not exist. */
export interface EnvObjects {
  configMaps: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
  secrets: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
}

export interface EnvContext {
  pod: V1Pod;
  podIp: string;
  hostIp: string;
  /** Where pods reach the API server: the values of KUBERNETES_SERVICE_HOST/PORT. */
  apiServer: { host: string; port: number };
  /**
   * Appended to NODE_PATH: the local stand-in for Node packages a check image would ship (images are not
   * unpacked here, so a check that requires the npm `kuberhealthy` client finds khrun's own copy).
   */
  imageNodePath?: string;
}

export type EnvResult = { ok: true; env: Array<[string, string]> } | { ok: false; message: string };

/** What a process gets before anything the pod sets: the defaults an image usually provides. */
export const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The ConfigMaps and Secrets a container's env and envFrom refer to, to fetch before resolving. */
export function referencedEnvObjects(container: V1Container): { configMaps: string[]; secrets: string[] } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
    if (from.secretRef?.name) secrets.add(from.secretRef.name);
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
    if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
  }
  return { configMaps: [...configMaps], secrets: [...secrets] };
}

/** The variables of the `kubernetes` Service, pointing at the host's proxy to the API server. */
export function serviceEnv(apiServer: { host: string; port: number }): Record<string, string> {
  const { host, port } = apiServer;
  const prefix = `KUBERNETES_PORT_${port}_TCP`;
  return {
    KUBERNETES_SERVICE_HOST: host,
    KUBERNETES_SERVICE_PORT: String(port),
    KUBERNETES_SERVICE_PORT_HTTPS: String(port),
    KUBERNETES_PORT: `tcp://${host}:${port}`,
    [prefix]: `tcp://${host}:${port}`,
    [`${prefix}_PROTO`]: 'tcp',
    [`${prefix}_PORT`]: String(port),
    [`${prefix}_ADDR`]: host,
  };
}

/**
 * Resolves a container's environment the way the kubelet does: the Service variables, then envFrom in
 * order, then env in order, each `value` expanded with `$(VAR)` against the variables defined before it;
 * PATH, HOME and HOSTNAME default to what an image and the runtime would provide. A missing required
 * ConfigMap, Secret or key is an error whose message is the kubelet's (the caller reports it as the
 * waiting reason CreateContainerConfigError).
 */
export function resolveContainerEnv(container: V1Container, ctx: EnvContext, objects: EnvObjects): EnvResult {
  const namespace = ctx.pod.metadata?.namespace ?? '';
  const services = serviceEnv(ctx.apiServer);
  const defined = new Map<string, string>();
  const lookup = (name: string) => defined.get(name) ?? services[name];

  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const isSecret = from.configMapRef === undefined;
    const data = (isSecret ? objects.secrets : objects.configMaps).get(ref.name ?? '');
    if (data === undefined) {
      if (ref.optional) continue;
      return { ok: false, message: `${isSecret ? 'secret' : 'configmap'} "${ref.name}" not found` };
    }
    for (const [key, value] of Object.entries(data)) {
      const name = (from.prefix ?? '') + key;
      if (isEnvVarName(name)) defined.set(name, value);
    }
  }

  for (const e of container.env ?? []) {
    let value = e.value ?? '';
    if (value !== '') {
      value = expand(value, lookup);
    } else if (e.valueFrom?.fieldRef) {
      const field = fieldRefValue(e.valueFrom.fieldRef, ctx);
      if (!field.ok) return field;
      value = field.value;
    } else if (e.valueFrom?.configMapKeyRef || e.valueFrom?.secretKeyRef) {
      const isSecret = e.valueFrom.configMapKeyRef === undefined;
      const ref = (e.valueFrom.configMapKeyRef ?? e.valueFrom.secretKeyRef)!;
      const data = (isSecret ? objects.secrets : objects.configMaps).get(ref.name ?? '');
      if (data === undefined) {
        if (ref.optional) continue;
        return { ok: false, message: `${isSecret ? 'secret' : 'configmap'} "${ref.name}" not found` };
      }
      const found = data[ref.key];
      if (found === undefined) {
        if (ref.optional) continue;
        const kind = isSecret ? 'Secret' : 'ConfigMap';
        return { ok: false, message: `couldn't find key ${ref.key} in ${kind} ${namespace}/${ref.name}` };
      }
      value = found;
    } else if (e.valueFrom?.resourceFieldRef) {
      return {
        ok: false,
        message: `env ${e.name}: resourceFieldRef is not supported by the khrun process kubelet`,
      };
    }
    defined.set(e.name, value);
  }

  const env = new Map<string, string>([
    ['PATH', BASE_PATH],
    ['HOME', '/root'],
    ['HOSTNAME', podHostname(ctx.pod)],
  ]);
  for (const [k, v] of Object.entries(services)) env.set(k, v);
  for (const [k, v] of defined) env.set(k, v);
  if (ctx.imageNodePath) {
    const own = env.get('NODE_PATH');
    env.set('NODE_PATH', own ? `${own}:${ctx.imageNodePath}` : ctx.imageNodePath);
  }
  return { ok: true, env: [...env] };
}

/** The pod's hostname as the kubelet computes it (spec.hostname, else the pod name, cut to 63). */
export function podHostname(pod: V1Pod): string {
  return (pod.spec?.hostname || pod.metadata?.name || 'pod').slice(0, 63).replace(/[-.]+$/, '');
}

type FieldValue = { ok: true; value: string } | { ok: false; message: string };

/** Values of the downward API field paths the kubelet supports, for env and downwardAPI volumes. */
export function fieldRefValue(ref: V1ObjectFieldSelector, ctx: Omit<EnvContext, 'apiServer'>): FieldValue {
  const { pod } = ctx;
  const meta = pod.metadata ?? {};
  const path = ref.fieldPath;
  const subscript = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (subscript) {
    const map = subscript[1] === 'labels' ? meta.labels : meta.annotations;
    return { ok: true, value: map?.[subscript[2]!] ?? '' };
  }
  switch (path) {
    case 'metadata.name':
      return { ok: true, value: meta.name ?? '' };
    case 'metadata.namespace':
      return { ok: true, value: meta.namespace ?? '' };
    case 'metadata.uid':
      return { ok: true, value: meta.uid ?? '' };
    case 'metadata.labels':
      return { ok: true, value: formatMap(meta.labels) };
    case 'metadata.annotations':
      return { ok: true, value: formatMap(meta.annotations) };
    case 'spec.nodeName':
      return { ok: true, value: pod.spec?.nodeName ?? '' };
    case 'spec.serviceAccountName':
      return { ok: true, value: pod.spec?.serviceAccountName ?? '' };
    case 'status.hostIP':
    case 'status.hostIPs':
      return { ok: true, value: ctx.hostIp };
    case 'status.podIP':
    case 'status.podIPs':
      return { ok: true, value: ctx.podIp };
    default:
      return { ok: false, message: `unsupported fieldPath: ${path}` };
  }
}

/** The downward API's rendering of a whole label or annotation map: sorted `key="value"` lines. */
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map![k])}`)
    .join('\n');
}

export function isEnvVarName(name: string): boolean {
  return /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);
}

/**
 * Kubernetes' `$(VAR)` expansion (third_party/forked/golang/expansion): `$(NAME)` becomes the value when
 * defined and stays literally as written otherwise; `$$` is an escaped `$`; anything else is kept.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === '$') {
      out += '$';
    } else if (rest[0] === '(') {
      const close = rest.indexOf(')', 1);
      if (close === -1) {
        out += '$(';
      } else {
        const name = rest.slice(1, close);
        out += lookup(name) ?? `$(${name})`;
        advance = close + 1;
      }
    } else {
      out += `$${rest[0]}`;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

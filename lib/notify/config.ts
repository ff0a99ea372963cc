import { parse as parseYaml } from 'yaml';
import { CHANNEL_TYPES, type ChannelConfig, type ChannelType } from './channel.ts';
import { PAGERDUTY_EVENTS_URL } from './channels/pagerduty.ts';
import { type PolicyLayer, type PolicyProblem, parsePolicyLayer, problemText } from './policy.ts';

/**
 * The notification configuration of a deployment: its channels (with their secrets), the cluster's policy
 * defaults, the status page to link to, and the bounds. One YAML or JSON document, given to every process
 * that runs checks or sweeps outboxes (runners, the tick, serve, the Lambda functions) as a mounted Secret
 * file, a variable from a Secret, or an SSM SecureString (lib/config/notify-options.ts reads it).
 */
export interface NotifyConfig {
  channels: ReadonlyMap<string, ChannelConfig>;
  /** The cluster's defaults: the same keys as the annotations (policy.ts). */
  defaults: PolicyLayer;
  /** A link to it goes into every notification (the check's entry: `?check=ns/name`). */
  statusPageUrl?: string;
  /**
   * Whether a check's namespace may set defaults in the ConfigMap khrun-notifications (default false:
   * reading it costs a GET per namespace per invocation whenever a check there fails, and the runner the
   * right to read it).
   */
  namespaceDefaults: boolean;
  /** The most requests to receivers one invocation makes (a batch, a tick): the rest wait for the next. */
  maxDeliveries: number;
}

/** The namespace defaults' ConfigMap, read in a check's namespace: its data keys are the policy keys. */
export const NAMESPACE_DEFAULTS_CONFIGMAP = 'khrun-notifications';

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_DELIVERIES = 20;

/** A configuration document that cannot be used: `at` is the key's path in it (`channels.oncall.url`). */
export class NotifyConfigError extends Error {
  override readonly name = 'NotifyConfigError';
  constructor(
    readonly at: string,
    readonly problem: string,
    readonly remedy: string,
  ) {
    super(`${at} ${problem}: ${remedy}`);
  }
}

const CHANNEL_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** How a channel's secret field is read: inline in the document, or `<field>File`, a path to a mounted Secret key. */
export type ReadSecretFile = (path: string) => string;

/**
 * Parses the document (YAML, of which JSON is a part). Throws NotifyConfigError naming the key and what to
 * write; the secrets' values never appear in a message.
 */
export function parseNotifyConfig(text: string, readFile: ReadSecretFile): NotifyConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new NotifyConfigError(
      'the document',
      `is not YAML (${(error as Error).message.split('\n')[0]})`,
      'give a YAML or JSON mapping (docs/alerts.md)',
    );
  }
  if (!isObj(doc))
    throw new NotifyConfigError(
      'the document',
      'is not a mapping',
      'give a mapping with channels: and defaults: (docs/alerts.md)',
    );
  const known = ['channels', 'defaults', 'statusPageUrl', 'namespaceDefaults', 'maxDeliveries'];
  for (const key of Object.keys(doc))
    if (!known.includes(key)) throw new NotifyConfigError(key, 'is not a setting', `use ${known.join(', ')}`);
  const channels = new Map<string, ChannelConfig>();
  const rawChannels = doc.channels ?? {};
  if (!isObj(rawChannels))
    throw new NotifyConfigError('channels', 'is not a mapping', 'map each channel name to {type, url, ...}');
  for (const [name, raw] of Object.entries(rawChannels)) channels.set(name, channelOf(name, raw, readFile));
  const defaults = defaultsOf(doc.defaults, channels);
  const statusPageUrl =
    doc.statusPageUrl === undefined ? undefined : httpUrl('statusPageUrl', doc.statusPageUrl);
  if (doc.namespaceDefaults !== undefined && typeof doc.namespaceDefaults !== 'boolean')
    throw new NotifyConfigError(
      'namespaceDefaults',
      'is not true or false',
      'write true (the default) or false',
    );
  const max = doc.maxDeliveries ?? DEFAULT_MAX_DELIVERIES;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 1000)
    throw new NotifyConfigError(
      'maxDeliveries',
      'is not a whole number from 1 to 1000',
      `write e.g. ${DEFAULT_MAX_DELIVERIES} (the default)`,
    );
  return {
    channels,
    defaults,
    ...(statusPageUrl ? { statusPageUrl } : {}),
    namespaceDefaults: doc.namespaceDefaults === true,
    maxDeliveries: max,
  };
}

function defaultsOf(raw: unknown, channels: ReadonlyMap<string, ChannelConfig>): PolicyLayer {
  if (raw === undefined) return {};
  if (!isObj(raw))
    throw new NotifyConfigError(
      'defaults',
      'is not a mapping',
      'map policy keys (failure-threshold, channels, ...) to values',
    );
  const entries = Object.fromEntries(
    Object.entries(raw).map(([k, v]) => [
      k,
      // A list of maintenance windows: their cron expressions hold commas, so ';' separates them.
      Array.isArray(v) ? v.join(k === 'maintenance' ? ';' : ',') : isObj(v) ? JSON.stringify(v) : String(v),
    ]),
  );
  const { layer, problems } = parsePolicyLayer(entries, (key) => `defaults.${key}`);
  const first: PolicyProblem | undefined = problems[0];
  if (first)
    throw new NotifyConfigError(first.where, `is ${JSON.stringify(first.value)}`, `write ${first.want}`);
  for (const name of layer.channels ?? [])
    if (!channels.has(name))
      throw new NotifyConfigError(
        'defaults.channels',
        `names ${name}, which channels: does not define`,
        `define it or remove it (defined: ${[...channels.keys()].join(', ') || 'none'})`,
      );
  return layer;
}

function channelOf(name: string, raw: unknown, readFile: ReadSecretFile): ChannelConfig {
  const at = `channels.${name}`;
  if (!CHANNEL_NAME.test(name))
    throw new NotifyConfigError(
      at,
      'is not a channel name',
      'use lowercase letters, digits and -, at most 63 characters',
    );
  if (!isObj(raw)) throw new NotifyConfigError(at, 'is not a mapping', 'give {type, url, ...}');
  const type = raw.type;
  if (!(CHANNEL_TYPES as readonly unknown[]).includes(type))
    throw new NotifyConfigError(
      `${at}.type`,
      `is ${JSON.stringify(type)}`,
      `write one of ${CHANNEL_TYPES.join(', ')}`,
    );
  const allowed = [
    'type',
    'timeoutSeconds',
    'namespaces',
    ...secretFields(type as ChannelType).flatMap((f) => [f, `${f}File`]),
  ];
  for (const key of Object.keys(raw))
    if (!allowed.includes(key))
      throw new NotifyConfigError(
        `${at}.${key}`,
        `is not a setting of a ${type} channel`,
        `use ${allowed.join(', ')}`,
      );
  const secret = (field: string, required: boolean) =>
    secretOf(raw, `${at}.${field}`, field, readFile, required);
  const urlText = secret('url', type !== 'pagerduty') ?? PAGERDUTY_EVENTS_URL;
  const url = httpUrl(`${at}.url`, urlText, { secret: true });
  const timeout = raw.timeoutSeconds ?? DEFAULT_TIMEOUT_MS / 1000;
  if (typeof timeout !== 'number' || !(timeout > 0) || timeout > 60)
    throw new NotifyConfigError(
      `${at}.timeoutSeconds`,
      'is not a number of seconds from 0 to 60',
      'write e.g. 10 (the default)',
    );
  const namespaces = raw.namespaces;
  if (
    namespaces !== undefined &&
    !(Array.isArray(namespaces) && namespaces.every((n) => typeof n === 'string'))
  )
    throw new NotifyConfigError(
      `${at}.namespaces`,
      'is not a list of namespaces',
      'write e.g. [team-a, team-b], or leave it out for any namespace',
    );
  const config: ChannelConfig = {
    name,
    type: type as ChannelType,
    url,
    timeoutMs: Math.round(timeout * 1000),
  };
  if (namespaces) config.namespaces = namespaces as string[];
  if (type === 'webhook') {
    const s = secret('secret', false);
    if (s !== undefined && s.length < 16)
      throw new NotifyConfigError(
        `${at}.secret`,
        'is shorter than 16 characters',
        'use a random one, e.g. from `openssl rand -hex 32`',
      );
    if (s) config.secret = s;
  }
  if (type === 'pagerduty') {
    const key = secret('routingKey', true) ?? '';
    // PagerDuty: "the 32 character Integration Key for an integration on a service or on a global ruleset".
    if (!/^[A-Za-z0-9]{32}$/.test(key))
      throw new NotifyConfigError(
        `${at}.routingKey`,
        `is ${key.length} characters, not the 32 of an integration key`,
        "copy the service's Events API v2 integration key",
      );
    config.routingKey = key;
  }
  return config;
}

/** The fields of a type that may be secrets (and so also come as `<field>File`). */
function secretFields(type: ChannelType): string[] {
  if (type === 'webhook') return ['url', 'secret'];
  if (type === 'pagerduty') return ['url', 'routingKey'];
  return ['url'];
}

function secretOf(
  raw: Record<string, unknown>,
  at: string,
  field: string,
  readFile: ReadSecretFile,
  required: boolean,
): string | undefined {
  const inline = raw[field];
  const file = raw[`${field}File`];
  if (inline !== undefined && file !== undefined)
    throw new NotifyConfigError(
      at,
      `and ${at}File are both set`,
      'give one of them (the file for a value from a mounted Secret)',
    );
  if (file !== undefined) {
    if (typeof file !== 'string')
      throw new NotifyConfigError(`${at}File`, 'is not a path', 'give the path of a mounted Secret key');
    let text: string;
    try {
      text = readFile(file);
    } catch (error) {
      throw new NotifyConfigError(
        `${at}File`,
        `(${file}) cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        'mount the Secret key there, or fix the path',
      );
    }
    const value = text.trim();
    if (!value)
      throw new NotifyConfigError(`${at}File`, `(${file}) is empty`, 'put the value in the Secret key');
    return value;
  }
  if (inline === undefined || inline === '') {
    if (required)
      throw new NotifyConfigError(at, 'is missing', `give ${field}, or ${field}File (a mounted Secret key)`);
    return undefined;
  }
  if (typeof inline !== 'string') throw new NotifyConfigError(at, 'is not text', `give ${field} as a string`);
  return inline.trim();
}

function httpUrl(at: string, value: unknown, opts: { secret?: boolean } = {}): string {
  const shown = opts.secret ? 'its value' : JSON.stringify(value);
  if (typeof value !== 'string') throw new NotifyConfigError(at, 'is not a URL', 'give an http(s) URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new NotifyConfigError(at, `is not a URL (${shown})`, 'give an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new NotifyConfigError(at, `is a ${url.protocol} URL`, 'give an http(s) URL');
  return value;
}

/** One text per problem, for logs and the notify state. */
export const problemTexts = (problems: readonly PolicyProblem[]) => problems.map(problemText);

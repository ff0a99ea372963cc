import { parseGoDuration } from '../core/duration.ts';
import { type ParentRef, parseDependsOn } from './dependencies.ts';
import { type FlapPolicy, parseFlapping } from './flapping.ts';
import { type MaintenanceWindow, parseMaintenance } from './maintenance.ts';
import type { Parsed } from './policy-value.ts';
import { parseSilence, type Silence } from './silence.ts';

/**
 * When and where a check's alerts are sent. Set by annotations on the check object (a v2 khcheck or
 * khjob, a v3 HealthCheck: annotations are free-form on all three), over the namespace's defaults (the
 * ConfigMap khrun-notifications in the check's namespace), over the cluster's (the notification
 * configuration's `defaults`), over BUILTIN_POLICY. Every layer uses the same keys and the same parser.
 */
export interface Policy {
  /** Channel names (the configuration defines each); empty: this check notifies nobody. */
  channels: string[];
  /** Consecutive failures before the alert fires. */
  failureThreshold: number;
  /** Consecutive successes before a firing alert resolves. */
  successThreshold: number;
  /** Whether resolving sends a notification. */
  sendResolved: boolean;
  /** While firing, a reminder at the first failing run this long after the last notice; 0: none. */
  reminderMs: number;
  /** PagerDuty's severity, and the `severity` label at Alertmanager. */
  severity: Severity;
  /** A silence (`khrun silence` writes it on the check object); null: none. */
  silence: Silence | null;
  /** Recurring maintenance windows: notifications are held while one is open. */
  maintenance: MaintenanceWindow[];
  /**
   * What a transition decided during a silence or window does: `notify` holds its notification until the
   * hold ends (then sent if still true: a firing that resolved meanwhile is dropped with its resolution),
   * `drop` sends nothing of an incident that fired during it. A resolution of an incident announced
   * before is sent when the hold ends either way, so no receiver keeps an incident open.
   */
  afterSilence: 'notify' | 'drop';
  /** Checks this one depends on: while one is failing, this one's failures notify nobody. */
  dependsOn: ParentRef[];
  /** Transitions within a window that make one flapping notice; null: off. */
  flapping: FlapPolicy | null;
}

export const SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Failing three times in a row fires, one success resolves, resolutions are sent, no reminders. */
export const BUILTIN_POLICY: Policy = {
  channels: [],
  failureThreshold: 3,
  successThreshold: 1,
  sendResolved: true,
  reminderMs: 0,
  severity: 'error',
  silence: null,
  maintenance: [],
  afterSilence: 'notify',
  dependsOn: [],
  flapping: null,
};

/** The annotations' prefix: `notify.khrun.dev/failure-threshold: "3"`. Not khrun.dev/, which is khrun's state. */
export const POLICY_ANNOTATION_PREFIX = 'notify.khrun.dev/';

/** The keys of every layer (an annotation is the prefix and the key; a ConfigMap's data key is the key). */
export const POLICY_KEYS = [
  'channels',
  'failure-threshold',
  'success-threshold',
  'send-resolved',
  'reminder',
  'severity',
  'silence',
  'maintenance',
  'after-silence',
  'depends-on',
  'flapping',
] as const;
export type PolicyKey = (typeof POLICY_KEYS)[number];

/** What one layer sets; a key it leaves out (or sets to a bad value) falls through to the layer below. */
export type PolicyLayer = Partial<Policy>;

const MAX_THRESHOLD = 1000;
const MAX_CHANNELS = 8;
const CHANNEL_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function count(text: string): Parsed<number> {
  const t = text.trim();
  const n = /^\d+$/.test(t) ? Number(t) : Number.NaN;
  return n >= 1 && n <= MAX_THRESHOLD
    ? { ok: true, value: n }
    : { ok: false, want: `a whole number from 1 to ${MAX_THRESHOLD}, e.g. "3"` };
}

const PARSERS: { [K in PolicyKey]: (text: string) => Parsed<unknown> } = {
  channels: (text) => {
    const t = text.trim();
    if (t === 'none') return { ok: true, value: [] };
    const names = [...new Set(t.split(',').map((s) => s.trim()))];
    const bad = names.find((n) => !CHANNEL_NAME.test(n));
    if (bad !== undefined || names.length > MAX_CHANNELS)
      return {
        ok: false,
        want: `a comma-separated list of up to ${MAX_CHANNELS} channel names the notification configuration defines (lowercase letters, digits, '-'), e.g. "oncall-slack,pagerduty", or "none"`,
      };
    return { ok: true, value: names };
  },
  'failure-threshold': count,
  'success-threshold': count,
  'send-resolved': (text) => {
    const t = text.trim().toLowerCase();
    if (t === 'true' || t === 'false') return { ok: true, value: t === 'true' };
    return { ok: false, want: '"true" or "false"' };
  },
  reminder: (text) => {
    const t = text.trim();
    if (t === '0' || t === 'off') return { ok: true, value: 0 };
    const d = parseGoDuration(t);
    const ms = d.ok ? d.ns / 1e6 : Number.NaN;
    return ms >= 60_000
      ? { ok: true, value: ms }
      : { ok: false, want: 'a duration of at least 1m, e.g. "4h" or "30m", or "0" for no reminders' };
  },
  severity: (text) => {
    const t = text.trim().toLowerCase();
    return (SEVERITIES as readonly string[]).includes(t)
      ? { ok: true, value: t }
      : { ok: false, want: `one of ${SEVERITIES.join(', ')}` };
  },
  silence: parseSilence,
  maintenance: parseMaintenance,
  'after-silence': (text) => {
    const t = text.trim().toLowerCase();
    return t === 'notify' || t === 'drop'
      ? { ok: true, value: t }
      : { ok: false, want: '"notify" or "drop"' };
  },
  'depends-on': parseDependsOn,
  flapping: parseFlapping,
};

const FIELD: { [K in PolicyKey]: keyof Policy } = {
  channels: 'channels',
  'failure-threshold': 'failureThreshold',
  'success-threshold': 'successThreshold',
  'send-resolved': 'sendResolved',
  reminder: 'reminderMs',
  severity: 'severity',
  silence: 'silence',
  maintenance: 'maintenance',
  'after-silence': 'afterSilence',
  'depends-on': 'dependsOn',
  flapping: 'flapping',
};

/** A value a layer could not use: which setting, what it held, what to write instead. Never fatal. */
export interface PolicyProblem {
  /** Where it was: `annotation notify.khrun.dev/failure-threshold on khcheck ns/name`. */
  where: string;
  value: string;
  want: string;
}

export const problemText = (p: PolicyProblem) =>
  `${p.where} is ${JSON.stringify(p.value.slice(0, 80))}: write ${p.want}`;

/**
 * One layer from its key/value pairs (`where` names a key's place for messages). Unknown keys under the
 * prefix and bad values are problems, reported and skipped, never fatal: a bad annotation must not stop
 * the outcome being recorded.
 */
export function parsePolicyLayer(
  entries: Readonly<Record<string, string>>,
  where: (key: string) => string,
): { layer: PolicyLayer; problems: PolicyProblem[] } {
  const layer: Record<string, unknown> = {};
  const problems: PolicyProblem[] = [];
  for (const [key, text] of Object.entries(entries)) {
    if (!(POLICY_KEYS as readonly string[]).includes(key)) {
      problems.push({ where: where(key), value: text, want: `one of the keys ${POLICY_KEYS.join(', ')}` });
      continue;
    }
    const parsed = PARSERS[key as PolicyKey](text);
    if (parsed.ok) layer[FIELD[key as PolicyKey]] = parsed.value;
    else problems.push({ where: where(key), value: text, want: parsed.want });
  }
  return { layer: layer as PolicyLayer, problems };
}

/** The `notify.khrun.dev/*` annotations of an object, keyed without the prefix. */
export function policyAnnotations(annotations: Readonly<Record<string, string>> | undefined) {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations ?? {}))
    if (k.startsWith(POLICY_ANNOTATION_PREFIX)) out[k.slice(POLICY_ANNOTATION_PREFIX.length)] = v;
  return out;
}

/** The policy the layers make, lowest first: each key from the highest layer that sets it. */
export function resolvePolicy(layers: readonly PolicyLayer[]): Policy {
  return Object.assign({}, BUILTIN_POLICY, ...layers.map((l) => defined(l))) as Policy;
}

function defined(layer: PolicyLayer): PolicyLayer {
  return Object.fromEntries(Object.entries(layer).filter(([, v]) => v !== undefined)) as PolicyLayer;
}

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { COMPAT_OUT_ENV } from './v2-results.ts';

/** This table's file in the compat output directory (bench/ for `npm run compat`). */
export const COMPAT_V3_FILE = 'compat-v3.json';

/** The status fields v3.0.0's HealthCheckStatus has, in its Go struct order. */
export const V3_STATUS_FIELDS = [
  'ok',
  'errors',
  'consecutiveFailures',
  'runDuration',
  'namespace',
  'currentUUID',
  'lastRunUnix',
  'successCount',
  'failureCount',
  'lastOKUnix',
  'lastFailureUnix',
  'additionalMetadata',
] as const;

/** One status field of one check as each system wrote it, and whether they agree. */
export interface FieldComparison {
  check: string;
  field: string;
  kuberhealthy: string;
  khrun: string;
  same: boolean;
  why: string;
}

export interface CompatV3Results {
  kuberhealthy: string;
  measured: string;
  /** The build the tests ran (stamped by `npm run compat`). */
  build?: { commit: string; dirty: boolean };
  how: string;
  /** How the v3 controller was kept off khrun's HealthChecks, and what showed it. */
  separation: string;
  fields: FieldComparison[];
  /** What v3.0.0's own /json and /metrics said about khrun's HealthChecks. */
  v3ReadsKhrun: Array<{ check: string; json: string; metric: string; matches: boolean }>;
}

type Status = Record<string, unknown> | undefined;

/** Unix-second fields: the two systems ran at different moments, so what is compared is when they fall. */
const TIMES = new Set(['lastRunUnix', 'lastOKUnix', 'lastFailureUnix']);

function shown(field: string, status: Status, namespace: string): string {
  const v = status?.[field];
  if (v === undefined) return '(absent)';
  if (TIMES.has(field) && typeof v === 'number') {
    const run = Number(status?.lastRunUnix ?? 0);
    return field === 'lastRunUnix' ? 'run start' : v >= run ? 'set, ≥ lastRunUnix' : 'set, < lastRunUnix';
  }
  if (field === 'runDuration' && typeof v === 'number') return v > 0 ? 'ns, > 0' : String(v);
  const text = JSON.stringify(v).replaceAll(namespace, '<namespace>');
  // Timeout messages carry the run's own UUID and start time, which no two runs share.
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>');
}

/** Why a field differs where the source explains it; '' when they agree. */
function explain(field: string, kuberhealthy: string, khrun: string): string {
  if (kuberhealthy === khrun) return '';
  if (field === 'runDuration' && kuberhealthy === '(absent)')
    return "v3.0.0 writes runDuration only in StopCheck (a HealthCheck's deletion), never after a run; khrun writes each run's duration";
  if (field === 'errors') return 'the timeout message is each system’s own wording';
  if (field === 'namespace' && kuberhealthy === '(absent)')
    return 'v3.0.0 writes namespace only when a report arrives (setCheckStatus); its timeout path (failRunIfOverdue) leaves it unset';
  return 'differs (see the values)';
}

/** Every v3 status field of one check under both systems (pure). */
export function compareStatuses(input: {
  check: string;
  kuberhealthy: Status;
  khrun: Status;
  namespaces: { kuberhealthy: string; khrun: string };
}): FieldComparison[] {
  return V3_STATUS_FIELDS.map((field) => {
    const kuberhealthy = shown(field, input.kuberhealthy, input.namespaces.kuberhealthy);
    const khrun = shown(field, input.khrun, input.namespaces.khrun);
    const why = explain(field, kuberhealthy, khrun);
    return { check: input.check, field, kuberhealthy, khrun, same: why === '', why };
  });
}

/** Writes the results where `npm run compat` asked (KHRUN_COMPAT_OUT_DIR); nothing when it did not. */
export async function writeCompatV3(results: CompatV3Results): Promise<void> {
  const dir = process.env[COMPAT_OUT_ENV];
  if (!dir) return;
  const path = resolve(dir, COMPAT_V3_FILE);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
}

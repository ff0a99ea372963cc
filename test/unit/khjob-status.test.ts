import { describe, expect, it } from 'vitest';
import { asJobState } from '../../lib/job/job-writes.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { renderMetrics } from '../../lib/status/metrics.ts';
import { buildStatus } from '../../lib/status/status-json.ts';
import { parsePromText } from '../helpers/prom-text.ts';

function recorded(name: string, spec: Partial<KhState['spec']>): KhState {
  const s = newKhState(name, 'team');
  s.spec = { ...s.spec, AuthoritativePod: 'runner-1', RunDuration: '1.5s', uuid: `${name}-uuid`, ...spec };
  return s;
}

const CHECK = recorded('dns', { OK: true });
const JOB = asJobState(
  recorded('migrate-once', { OK: false, Errors: ['Job execution error: team/migrate-once: boom'] }),
);
const NEVER_RAN_JOB = asJobState(newKhState('later', 'team'));

describe("a khjob's result in v2's status JSON and metrics", () => {
  it('is listed under JobDetails, counts in the global OK and Errors, and a never-run khjob is hidden', () => {
    const status = buildStatus([CHECK, JOB, NEVER_RAN_JOB], { currentMaster: 'm' });
    expect(Object.keys(status.CheckDetails)).toEqual(['team/dns']);
    expect(Object.keys(status.JobDetails)).toEqual(['team/migrate-once']);
    expect(status.JobDetails['team/migrate-once']).toMatchObject({
      OK: false,
      Errors: ['Job execution error: team/migrate-once: boom'],
      RunDuration: '1.5s',
      Namespace: 'team',
    });
    expect(status.OK).toBe(false);
    expect(status.Errors).toEqual(['Job execution error: team/migrate-once: boom']);
  });

  it("has v2's kuberhealthy_job and kuberhealthy_job_duration_seconds series, and no check series", async () => {
    const text = await renderMetrics([CHECK, JOB], { currentMaster: 'm', nowMs: Date.now() });
    const families = parsePromText(text);
    expect(families.get('kuberhealthy_job')?.help).toBe('Shows the status of a Kuberhealthy job');
    expect(families.get('kuberhealthy_job')?.samples).toEqual([
      {
        name: 'kuberhealthy_job',
        labels: {
          check: 'team/migrate-once',
          namespace: 'team',
          status: '0',
          error: 'Job execution error: team/migrate-once: boom',
        },
        value: 0,
      },
    ]);
    expect(families.get('kuberhealthy_job_duration_seconds')?.samples[0]).toMatchObject({
      labels: { check: 'team/migrate-once', namespace: 'team' },
      value: 1.5,
    });
    const checks = families.get('kuberhealthy_check')?.samples.map((s) => s.labels.check);
    expect(checks).toEqual(['team/dns']);
  });
});

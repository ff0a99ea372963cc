import type { V1CronJob } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import { planSync } from '../../lib/sync/sync.ts';

const TEMPLATE = { spec: { containers: [{ name: 'runner', image: 'khrun:0.1.0' }] } };

const hc = (name: string): HealthCheck => ({
  apiVersion: 'kuberhealthy.github.io/v2',
  kind: 'HealthCheck',
  metadata: { name, namespace: 'team', uid: `uid-${name}` },
  spec: { runInterval: '5m', timeout: '1m', podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } } },
});
const khcheck: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: 'dns', namespace: 'team', uid: 'uid-khcheck' },
  spec: { runInterval: '5m', timeout: '1m', podSpec: { containers: [{ name: 'c', image: 'x' }] } },
};

describe('khrun sync and Kuberhealthy v3 HealthChecks', () => {
  it('makes one CronJob per HealthCheck, owned by it and running `khrun run --healthcheck`', () => {
    const plan = planSync([khcheck], [], TEMPLATE, DEFAULT_RUN_JOB_OPTIONS, [hc('dns')]);
    const names = plan.map((a) => (a.kind === 'apply' ? a.cronJob.metadata?.name : a.name));
    // A khcheck and a HealthCheck of one name each keep their own CronJob.
    expect(names).toEqual(['khrun-dns', 'khrun-hc-dns']);
    const cronJob = (plan[1] as { cronJob: V1CronJob }).cronJob;
    expect(cronJob.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'kuberhealthy.github.io/v2',
        kind: 'HealthCheck',
        name: 'dns',
        uid: 'uid-dns',
        controller: true,
      },
    ]);
    expect(cronJob.spec?.concurrencyPolicy).toBe('Forbid');
    const job = cronJob.spec?.jobTemplate.spec;
    expect(job?.activeDeadlineSeconds).toBe(60 + DEFAULT_RUN_JOB_OPTIONS.deadlineMarginSeconds);
    const env = job?.template.spec?.containers[0]?.env ?? [];
    expect(env).toEqual([
      { name: 'HEALTHCHECK_NAME', value: 'dns' },
      { name: 'CHECK_NAMESPACE', value: 'team' },
    ]);
    // Every 5 minutes (the minute offset is the HealthCheck's own, from its uid).
    expect(cronJob.spec?.schedule).toMatch(/^(\d+-59)?(\*)?\/5 \* \* \* \*$/);
  });

  it("deletes the CronJob of a HealthCheck that is gone, and keeps a live one's", () => {
    const existing = ['khrun-hc-gone', 'khrun-hc-dns'].map(
      (name): V1CronJob => ({ metadata: { name, namespace: 'team', annotations: {} } }),
    );
    const plan = planSync([], existing, TEMPLATE, DEFAULT_RUN_JOB_OPTIONS, [hc('dns')]);
    expect(plan.filter((a) => a.kind === 'delete').map((a) => a.kind === 'delete' && a.name)).toEqual([
      'khrun-hc-gone',
    ]);
  });
});

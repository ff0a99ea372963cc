import type { V1CronJob } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CRONJOB_NAME_MAX, checkCronJob, cronJobName } from '../../lib/schedule/check-cronjob.ts';
import { cronForInterval } from '../../lib/schedule/cron.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import { planSync } from '../../lib/sync/sync.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('cronForInterval', () => {
  it.each([
    [MIN, 0, '* * * * *', true],
    [5 * MIN, 0, '*/5 * * * *', true],
    [5 * MIN, 7, '2-59/5 * * * *', true],
    [15 * MIN, 22, '7-59/15 * * * *', true],
    [HOUR, 37, '37 * * * *', true],
    [6 * HOUR, 37 + (3 << 8), '37 3-23/6 * * *', true],
    [24 * HOUR, 5 + (13 << 16), '5 13 * * *', true],
    [7 * 24 * HOUR, 5 + (13 << 16) + (2 << 24), '5 13 * * 2', true],
    [7 * MIN, 0, '*/6 * * * *', false],
    [90 * MIN, 10, '10 * * * *', false],
    [30_000, 0, '* * * * *', false],
    [45 * 24 * HOUR, 0, '0 0 * * 0', false],
  ])('%d ms (seed %d) -> "%s" exact=%s', (intervalMs, seed, schedule, exact) => {
    const choice = cronForInterval(intervalMs, seed);
    expect(choice).toMatchObject({ schedule, exact });
    if (!exact) expect(choice.note).toMatch(/has no exact cron form; scheduled every /);
  });

  it('says what was chosen and why', () => {
    expect(cronForInterval(7 * MIN, 0).note).toBe(
      'runInterval 7m0s has no exact cron form; scheduled every 6m0s ("*/6 * * * *"): the longest interval cron repeats exactly that is not longer than 7m0s',
    );
    expect(cronForInterval(30_000, 0).note).toContain('cron fires at most once a minute');
  });
});

function check(name: string, runInterval: string, timeout = '2m', namespace = 'kuberhealthy'): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name, namespace, uid: `uid-${name}` },
    spec: { runInterval, timeout, podSpec: { containers: [{ name: 'c', image: 'busybox' }] } },
  };
}

const template = {
  spec: {
    serviceAccountName: 'khrun-runner',
    containers: [{ name: 'runner', image: 'khrun:0.1.0', args: ['run'] }],
  },
};

describe('checkCronJob', () => {
  it('builds the CronJob of a check', () => {
    const { cronJob } = checkCronJob(check('dns', '10m', '90s'), template, DEFAULT_RUN_JOB_OPTIONS);
    expect(cronJob.metadata).toMatchObject({
      name: 'khrun-dns',
      namespace: 'kuberhealthy',
      labels: {
        'app.kubernetes.io/managed-by': 'khrun',
        'app.kubernetes.io/component': 'check-cronjob',
        'khrun.dev/check': 'dns',
      },
      ownerReferences: [
        {
          apiVersion: 'comcast.github.io/v1',
          kind: 'KuberhealthyCheck',
          name: 'dns',
          uid: 'uid-dns',
          controller: true,
        },
      ],
    });
    expect(cronJob.spec).toMatchObject({
      timeZone: 'Etc/UTC',
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 300,
      successfulJobsHistoryLimit: 1,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        spec: {
          backoffLimit: 0,
          activeDeadlineSeconds: 90 + 120,
          // One interval (10 minutes) after it finishes: job-retention.ts.
          ttlSecondsAfterFinished: 600,
          podFailurePolicy: {
            rules: [
              { action: 'FailJob', onExitCodes: { operator: 'In', values: [2] } },
              { action: 'Ignore' },
            ],
          },
        },
      },
    });
    expect(cronJob.spec?.schedule).toMatch(/^(\*|\d-59)\/10 \* \* \* \*$/);
    expect(cronJob.spec?.jobTemplate.spec?.template.spec?.containers[0]?.env).toEqual([
      { name: 'CHECK_NAME', value: 'dns' },
      { name: 'CHECK_NAMESPACE', value: 'kuberhealthy' },
    ]);
  });

  it("keeps a check's finished Jobs about one interval (2 to 10 minutes)", () => {
    const ttl = (interval: string) =>
      checkCronJob(check('c', interval), template, DEFAULT_RUN_JOB_OPTIONS).cronJob.spec?.jobTemplate.spec
        ?.ttlSecondsAfterFinished;
    expect(ttl('1m')).toBe(120);
    expect(ttl('5m')).toBe(300);
    expect(ttl('1h')).toBe(600);
  });

  it('keeps names within 52 characters without collisions', () => {
    const long = 'a-very-long-check-name-that-goes-on-and-on-and-on-forever';
    const a = cronJobName({ namespace: 'x', name: long });
    const b = cronJobName({ namespace: 'y', name: long });
    expect(a.length).toBeLessThanOrEqual(CRONJOB_NAME_MAX);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^khrun-a-very-long[a-z0-9-]*-[0-9a-f]{6}$/);
  });

  it('notes an inexact interval and schedules an invalid check at the defaults', () => {
    expect(
      checkCronJob(check('odd', '7m'), template, DEFAULT_RUN_JOB_OPTIONS).cronJob.metadata?.annotations?.[
        'khrun.dev/schedule-note'
      ],
    ).toMatch(/7m0s/);
    const bad = checkCronJob(check('bad', 'soon'), template, DEFAULT_RUN_JOB_OPTIONS);
    expect(bad.problem).toMatch(/runInterval "soon" is not a Go duration/);
    expect(bad.cronJob.spec?.schedule).toMatch(/\/10 \* \* \* \*$/);
  });
});

describe('planSync', () => {
  it('applies one CronJob per khcheck and deletes those whose khcheck is gone', () => {
    const orphan: V1CronJob = {
      metadata: {
        name: 'khrun-gone',
        namespace: 'kuberhealthy',
        annotations: { 'khrun.dev/check-name': 'gone', 'khrun.dev/check-namespace': 'kuberhealthy' },
      },
    };
    const kept: V1CronJob = { metadata: { name: 'khrun-dns', namespace: 'kuberhealthy' } };
    const plan = planSync(
      [check('dns', '5m'), check('web', '7m', '1m', 'team-a')],
      [orphan, kept],
      template,
      DEFAULT_RUN_JOB_OPTIONS,
    );
    expect(
      plan.map((a) =>
        a.kind === 'apply'
          ? `apply ${a.cronJob.metadata?.namespace}/${a.cronJob.metadata?.name}`
          : `${a.kind} ${a.namespace}/${a.name}`,
      ),
    ).toEqual(['apply kuberhealthy/khrun-dns', 'apply team-a/khrun-web', 'delete kuberhealthy/khrun-gone']);
    expect(plan[1]).toMatchObject({
      note: expect.stringContaining('runInterval 7m0s has no exact cron form'),
    });
  });
});

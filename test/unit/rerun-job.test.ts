import type { V1Job, V1PodTemplateSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../lib/kube/kube-client.ts';
import { rerunJob } from '../../lib/rerun/start-job.ts';
import { checkRefOf } from '../../lib/rerun/target-ref.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import { jobDispatcher } from '../../lib/tick/tick-kube.ts';

// A person's runner Job is the tick's: the admission policies that hold the tick's Jobs to the runner
// PodTemplate do not match a person's identity, so the Job is made by the very builder the tick uses and
// differs only in its name.

const template: V1PodTemplateSpec = {
  metadata: { labels: { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'runner' } },
  spec: {
    serviceAccountName: 'khrun-runner',
    restartPolicy: 'Never',
    containers: [
      {
        name: 'runner',
        image: 'khrun:0.1.0',
        args: ['run', '--output', 'json'],
        env: [
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'CHECK_NAME', value: 'left-over' },
        ],
      },
    ],
  },
};

/** The Job the tick's dispatcher creates for the same check. */
async function tickJob(check: Parameters<typeof rerunJob>[1]): Promise<V1Job> {
  let created: V1Job | undefined;
  const client = {
    batch: {
      createNamespacedJob: async ({ body }: { body: V1Job }) => {
        created = body;
        return body;
      },
    },
  } as unknown as KubeClient;
  const dispatcher = jobDispatcher({
    client,
    namespace: 'kuberhealthy',
    template,
    jobOptions: DEFAULT_RUN_JOB_OPTIONS,
  });
  await dispatcher.dispatch(check, 'khrun-run-x');
  if (!created) throw new Error('the dispatcher created nothing');
  return created;
}

describe("a person's runner Job", () => {
  it.each([
    [
      { kind: 'khcheck', namespace: 'team-a', name: 'dns' },
      { spec: { runInterval: '5m', timeout: '30s', podSpec: { containers: [{ name: 'c', image: 'i' }] } } },
      'CHECK_NAME',
    ],
    [
      { kind: 'khjob', namespace: 'team-a', name: 'migrate' },
      {
        spec: { timeout: '2m', podSpec: { containers: [{ name: 'c', image: 'i' }] } },
        metadata: { name: 'migrate', namespace: 'team-a' },
      },
      'KHJOB_NAME',
    ],
    [
      { kind: 'healthcheck', namespace: 'team-a', name: 'v3' },
      { spec: { timeout: '45s' }, metadata: { name: 'v3', namespace: 'team-a' } },
      'HEALTHCHECK_NAME',
    ],
  ] as const)('for a %o is the tick’s Job but for its name', async (target, object, variable) => {
    const check = checkRefOf(target, object);
    const mine = rerunJob(template, check, 'kuberhealthy');
    const tick = await tickJob(check);
    expect(mine.spec).toEqual(tick.spec);
    const { name: _name, ...tickMeta } = tick.metadata ?? {};
    const { generateName, ...mineMeta } = mine.metadata ?? {};
    expect(mineMeta).toEqual(tickMeta);
    expect(generateName).toBe(`khrun-rerun-${target.name}-`);
    const env = mine.spec?.template.spec?.containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: variable, value: target.name });
    expect(env).toContainEqual({ name: 'CHECK_NAMESPACE', value: 'team-a' });
    // The template's own variable of that name is replaced, never doubled.
    expect(env.filter((e) => e.name === variable)).toHaveLength(1);
  });

  it('sizes its deadline from the object’s timeout, as the tick does', () => {
    const khcheck = checkRefOf(
      { kind: 'khcheck', namespace: 'a', name: 'c' },
      { spec: { runInterval: '10m', timeout: '90s', podSpec: { containers: [{ name: 'c', image: 'i' }] } } },
    );
    expect(khcheck).toMatchObject({ timeoutMs: 90_000, runIntervalMs: 600_000 });
    expect(rerunJob(template, khcheck, 'k').spec?.activeDeadlineSeconds).toBe(90 + 120);
    expect(checkRefOf({ kind: 'healthcheck', namespace: 'a', name: 'h' }, { spec: {} }).timeoutMs).toBe(
      30_000,
    );
  });

  it('keeps its generated name within 63 characters for the longest check names', () => {
    const check = checkRefOf(
      { kind: 'khcheck', namespace: 'a', name: 'x'.repeat(253) },
      { spec: { podSpec: { containers: [] } } },
    );
    const base = rerunJob(template, check, 'k').metadata?.generateName ?? '';
    expect(base.length + 5).toBeLessThanOrEqual(63);
    expect(base).toMatch(/^khrun-rerun-x+-[0-9a-f]{6}-$/);
  });
});

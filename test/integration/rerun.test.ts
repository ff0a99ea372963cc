import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPORT_HOST_EXTENSION } from '../../lib/config/kubeconfig-report-host.ts';
import { HC_API_VERSION, HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { KHJOB_PLURAL } from '../../lib/job/khjob.ts';
import { rerunJob } from '../../lib/rerun/start-job.ts';
import { checkRefOf } from '../../lib/rerun/target-ref.ts';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { applyDeploy, buildTestBundles, DEPLOY_NAMESPACE, kubectl } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, readState, repoRoot } from './helpers/khrun.ts';
import { asPerson, person } from './helpers/person.ts';

// `khrun run` from a laptop against a real cluster: infra/deploy applied unchanged (its tick suspended, so
// only the person's runs run), a person with the khrun-rerun roles only (docs/rerun.md), a kubeconfig with
// no khrun.dev/report-host extension and no report host in the environment. The run goes to a runner Job
// made from the khrun-runner PodTemplate, followed to its outcome, printed as a run here prints it.

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const batch = admin.makeApiClient(BatchV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const khrunNs = DEPLOY_NAMESPACE;
let ns: string;
let alice: Awaited<ReturnType<typeof person>>;
let bob: Awaited<ReturnType<typeof person>>;
let adminWithoutReportHost: string;

const reporter = (script: string) => ({ containers: [nodeContainer(script, { env: npmClientEnv })] });
/** v3's protocol from a node checker: POST the report with the run's UUID in the kh-run-uuid header. */
const V3_REPORT = `fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'content-type':
  'application/json', 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) })
  .then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1));`;

/** The person's runner Jobs of a check (a rerun's Job is named khrun-rerun-<check>-<5 characters>). */
async function rerunJobs(check: string): Promise<V1Job[]> {
  const jobs = await batch.listNamespacedJob({
    namespace: khrunNs,
    labelSelector: 'app.kubernetes.io/component=run',
  });
  return jobs.items.filter((j) => j.metadata?.name?.startsWith(`khrun-rerun-${check}-`));
}

beforeAll(async () => {
  await buildTestBundles();
  await applyDeploy({ name: 'rerun', suspend: ['khrun-tick'] });
  ns = await freshNamespace(admin, 'rerun');
  // Bob may read the PodTemplate but not create Jobs: a Role of his own instead of khrun-rerun.
  await kubectl([
    '-n',
    khrunNs,
    'create',
    'role',
    `template-reader-${ns}`,
    '--verb=get',
    '--resource=podtemplates',
    '--resource-name=khrun-runner',
  ]);
  [alice, bob] = await Promise.all([
    person(admin, { namespace: ns, name: 'alice' }),
    person(admin, { namespace: ns, name: 'bob', roles: false, extraKhrunRole: `template-reader-${ns}` }),
  ]);
  // The admin's kubeconfig as a real cluster's looks: no report host recorded.
  const doc = loadYaml<{ clusters: Array<{ cluster: { extensions?: unknown[] } }> }>(
    await readFile(inject('kubeconfigPath'), 'utf8'),
  );
  for (const c of doc.clusters) delete c.cluster.extensions;
  adminWithoutReportHost = join(repoRoot, '.khrun/test-kubeconfigs', `${ns}-admin`);
  await writeFile(adminWithoutReportHost, JSON.stringify(doc), { mode: 0o600 });

  await createCheck(admin, ns, 'passes', reporter("require('kuberhealthy').ReportSuccess()"));
  await createCheck(
    admin,
    ns,
    'fails',
    reporter("require('kuberhealthy').ReportFailure(['upstream answered 503 <b>&amp;</b>'])"),
  );
  await createCheck(
    admin,
    ns,
    'slow',
    reporter("setTimeout(() => require('kuberhealthy').ReportSuccess(), 8000)"),
    { timeout: '60s' },
  );
  await custom.createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHJOB_PLURAL,
    namespace: ns,
    body: {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyJob',
      metadata: { name: 'once', namespace: ns },
      spec: { timeout: '60s', podSpec: reporter("require('kuberhealthy').ReportSuccess()") },
    },
  });
  await custom.createNamespacedCustomObject({
    group: HC_GROUP,
    version: HC_VERSION,
    plural: HC_PLURAL,
    namespace: ns,
    body: {
      apiVersion: HC_API_VERSION,
      kind: 'HealthCheck',
      metadata: { name: 'v3', namespace: ns },
      spec: {
        runInterval: '10m',
        timeout: '60s',
        podSpec: { spec: { containers: [nodeContainer(V3_REPORT)] } },
      },
    },
  });
}, 180_000);

afterAll(async () => {
  await Promise.all([alice?.cleanup(), bob?.cleanup()]);
  await kubectl(['-n', khrunNs, 'delete', 'role', `template-reader-${ns}`, '--ignore-not-found']).catch(
    () => undefined,
  );
  for (const job of (await batch.listNamespacedJob({ namespace: khrunNs })).items)
    if (job.metadata?.name?.startsWith('khrun-rerun-'))
      await batch
        .deleteNamespacedJob({ namespace: khrunNs, name: job.metadata.name, propagationPolicy: 'Background' })
        .catch(() => undefined);
  await dropNamespace(admin, ns);
});

describe('khrun run from a laptop: a runner Job in the cluster', () => {
  it('records a passing check through a runner Job and prints the -o json document only on stdout', async () => {
    expect(await readFile(alice.kubeconfig, 'utf8')).not.toContain(REPORT_HOST_EXTENSION);
    const result = await asPerson(alice.kubeconfig, ['run', '--check', 'passes', '-n', ns, '-o', 'json']);
    expect(result.code, result.stderr).toBe(0);
    const document = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(document).toMatchObject({
      check: `${ns}/passes`,
      result: 'recorded',
      kind: 'Succeeded',
      ok: true,
      errors: [],
      adopted: false,
    });
    // Progress on stderr: the Job, its pod scheduled and running, the outcome recorded by that pod.
    const stderr = result.stderr;
    console.log(`[rerun] khrun run --check passes, stderr:\n${stderr}`);
    const job =
      /runner Job khrun\/(khrun-rerun-passes-[a-z0-9]{5}) created from PodTemplate khrun\/khrun-runner/.exec(
        stderr,
      )?.[1];
    expect(job, stderr).toBeDefined();
    expect(stderr).toMatch(new RegExp(`pod ${job}-[a-z0-9]+ scheduled on `));
    expect(stderr).toMatch(new RegExp(`pod ${job}-[a-z0-9]+ running`));
    expect(stderr).toMatch(new RegExp(`outcome recorded by ${job}-[a-z0-9]+: Succeeded in `));
    const state = await readState(admin, ns, 'passes');
    expect(readLastOutcome(state)?.kind).toBe('Succeeded');
    expect(state?.spec.AuthoritativePod).toMatch(new RegExp(`^${job}-[a-z0-9]+$`));

    // The Job is the tick's, made from the PodTemplate as it is in the cluster, but for its name.
    const [created] = await rerunJobs('passes');
    const template = (await core.readNamespacedPodTemplate({ namespace: khrunNs, name: 'khrun-runner' }))
      .template!;
    const check = checkRefOf(
      { kind: 'khcheck', namespace: ns, name: 'passes' },
      {
        spec: { runInterval: '10m', timeout: '60s', podSpec: {} },
      },
    );
    const expected = rerunJob(template, check, khrunNs);
    expect(created?.metadata?.name).toBe(job);
    expect(created?.spec?.template.spec?.containers).toMatchObject(
      expected.spec?.template.spec?.containers ?? [],
    );
    expect(created?.spec?.template.spec?.serviceAccountName).toBe('khrun-runner');
    expect(created?.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 180 });
  }, 180_000);

  it('a failing check exits 0 and prints the same line a run here prints', async () => {
    const result = await asPerson(alice.kubeconfig, ['run', '--check', 'fails', '-n', ns]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^${ns}/fails: Failed in \\d+\\.\\d\\ds\\n  upstream answered 503 <b>&amp;</b>\\n$`),
    );
    expect(readLastOutcome(await readState(admin, ns, 'fails'))?.kind).toBe('Failed');
  }, 180_000);

  it('runs a khjob (--job) and a HealthCheck (--healthcheck) the same way', async () => {
    const [job, hc] = await Promise.all([
      asPerson(alice.kubeconfig, ['run', '--job', 'once', '-n', ns, '-o', 'json']),
      asPerson(alice.kubeconfig, ['run', '--healthcheck', 'v3', '-n', ns, '-o', 'yaml']),
    ]);
    expect(job.code, job.stderr).toBe(0);
    expect(JSON.parse(job.stdout)).toMatchObject({
      check: `${ns}/once`,
      result: 'recorded',
      kind: 'Succeeded',
    });
    expect(job.stderr).toMatch(/runner Job khrun\/khrun-rerun-once-[a-z0-9]{5} created/);
    const khjob = (await custom.getNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHJOB_PLURAL,
      namespace: ns,
      name: 'once',
    })) as { spec: { phase?: string } };
    expect(khjob.spec.phase).toBe('Completed');

    expect(hc.code, hc.stderr).toBe(0);
    expect(loadYaml(hc.stdout)).toMatchObject({
      check: `${ns}/v3`,
      result: 'recorded',
      kind: 'Succeeded',
      ok: true,
    });
    const healthCheck = (await custom.getNamespacedCustomObject({
      group: HC_GROUP,
      version: HC_VERSION,
      plural: HC_PLURAL,
      namespace: ns,
      name: 'v3',
    })) as { status?: { ok?: boolean; lastRunUnix?: number } };
    expect(healthCheck.status).toMatchObject({ ok: true });
  }, 240_000);

  it('a missing check exits 2 before any Job exists', async () => {
    const result = await asPerson(alice.kubeconfig, ['run', '--check', 'nope', '-n', ns, '-o', 'json']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`khcheck ${ns}/nope not found`);
    expect(await rerunJobs('nope')).toEqual([]);
  }, 60_000);

  it('a Job the caller may not create: 403 naming the verb and resource, exit 2', async () => {
    const result = await asPerson(bob.kubeconfig, ['run', '--check', 'passes', '-n', ns]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`forbidden (403): cannot create jobs.batch in namespace ${khrunNs}`);
    expect(result.stderr).toContain('khrun-rerun');
    expect(result.stdout).toBe('');
  }, 60_000);

  it('khrun not installed where it looks: says what to install and which flag names where it is', async () => {
    const result = await asPerson(adminWithoutReportHost, [
      'run',
      '--check',
      'passes',
      '-n',
      ns,
      '--runner-namespace',
      ns,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`the runner PodTemplate ${ns}/khrun-runner does not exist`);
    expect(result.stderr).toMatch(/kubectl apply -k infra\/deploy.*--runner-namespace/);
  }, 60_000);

  it('Ctrl-C stops following: exit 1, the Job keeps running and records the outcome', async () => {
    const before = readLastOutcome(await readState(admin, ns, 'slow'))?.uuid;
    let signalled = false;
    const result = await asPerson(alice.kubeconfig, ['run', '--check', 'slow', '-n', ns], {
      onStderr: (text, child) => {
        if (!signalled && /run claimed by /.test(text)) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(signalled, result.stderr).toBe(true);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /khrun: interrupted; the runner Job khrun\/khrun-rerun-slow-[a-z0-9]{5} keeps running and records the outcome/,
    );
    expect(result.stdout).toBe('');
    await waitFor(admin, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/khstates`,
      fieldSelector: 'metadata.name=slow',
      decide: (items) => {
        const outcome = readLastOutcome([...items.values()][0] as never);
        return outcome && outcome.uuid !== before ? outcome : undefined;
      },
      timeoutMs: 90_000,
      description: 'the interrupted rerun of slow to record its outcome',
    });
    expect(readLastOutcome(await readState(admin, ns, 'slow'))?.kind).toBe('Succeeded');
  }, 180_000);
});

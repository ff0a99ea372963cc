import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveHelm } from '@khrun/devkit/local/binaries.ts';
import {
  AdmissionregistrationV1Api,
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR } from '../../infra/helm/render-deploy.ts';
import { DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { pollUntil } from './helpers/admission.ts';
import { serviceAccountKubeConfig } from './helpers/deploy.ts';
import { repoRoot } from './helpers/khrun.ts';
import { startBareControlPlane } from './helpers/second-control-plane.ts';

const run = promisify(execFile);

// What the chart's README says about reinstalling khrun (kubernetes/kubernetes#130887), tried on a real
// kube-apiserver of the pinned version, a bare one of this test's own (the suite's always has bindings
// naming PodTemplate, from infra/deploy). khrun's template policies take the PodTemplate khrun-runner as
// their parameter; here a policy of the same shape takes the PodTemplate `param` and refuses the ConfigMap
// its label `deny` names, so which ConfigMap is refused shows which version of the parameter the API
// server sees.
//
// 1. The binding deleted (as by `helm uninstall`) and created again (`helm install`): the API server keeps
//    the parameter as it was and sees no change to it any more, until it restarts.
// 2. With a placeholder binding naming PodTemplate kept meanwhile (shaped as the chart's parameter keeper,
//    templates/parameter-keeper.yaml), the same deletion and creation leave it seeing every change.

const NS = 'default';
const POLICY = 'param-probe';

const policy: V1ValidatingAdmissionPolicy = {
  metadata: { name: POLICY },
  spec: {
    failurePolicy: 'Fail',
    paramKind: { apiVersion: 'v1', kind: 'PodTemplate' },
    matchConstraints: {
      resourceRules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
      ],
    },
    validations: [
      {
        expression: "object.metadata.name != params.metadata.labels['deny']",
        message: 'refused by param-probe',
      },
    ],
  },
};
const binding: V1ValidatingAdmissionPolicyBinding = {
  metadata: { name: POLICY },
  spec: {
    policyName: POLICY,
    validationActions: ['Deny'],
    paramRef: { name: 'param', namespace: NS, parameterNotFoundAction: 'Deny' },
  },
};
// A keeper shaped as the chart's (templates/parameter-keeper.yaml), under a name of its own.
const keeperPolicy: V1ValidatingAdmissionPolicy = {
  metadata: { name: 'khrun-podtemplate-param-keeper' },
  spec: {
    failurePolicy: 'Ignore',
    paramKind: { apiVersion: 'v1', kind: 'PodTemplate' },
    matchConstraints: {
      resourceRules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['podtemplates'] },
      ],
    },
    validations: [{ expression: 'true' }],
  },
};
const keeperBinding: V1ValidatingAdmissionPolicyBinding = {
  metadata: { name: 'khrun-podtemplate-param-keeper' },
  spec: {
    policyName: 'khrun-podtemplate-param-keeper',
    validationActions: ['Audit'],
    paramRef: { name: 'khrun-runner', parameterNotFoundAction: 'Allow' },
  },
};

type Answer = 'allowed' | 'refused' | 'no params';

/** What creating the ConfigMap `name` meets: allowed, refused by the policy, or its parameter missing. */
async function probe(kc: KubeConfig, name: string): Promise<Answer> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name } } });
    await core.deleteNamespacedConfigMap({ namespace: NS, name });
    return 'allowed';
  } catch (error) {
    const text = String((error as { body?: unknown }).body ?? error);
    if (text.includes('no params found')) return 'no params';
    if (text.includes('refused by param-probe')) return 'refused';
    throw error;
  }
}

/** Probes until the answer is `want` or the deadline (the policy source and informers act within ms to ~1 s). */
async function until(kc: KubeConfig, name: string, want: Answer, ms = 30_000): Promise<Answer> {
  const deadline = Date.now() + ms;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
    const answer = await probe(kc, name);
    if (answer === want || Date.now() > deadline) return answer;
    await new Promise((r) => setTimeout(r, delayMs));
  }
}

describe('a built-in parameter kind after its last binding is deleted (kubernetes/kubernetes#130887)', () => {
  let bare: Awaited<ReturnType<typeof startBareControlPlane>>;
  let kc: KubeConfig;
  let admission: AdmissionregistrationV1Api;
  beforeAll(async () => {
    bare = await startBareControlPlane(inject('hostIp'));
    kc = bare.cp.adminKubeConfig;
    admission = kc.makeApiClient(AdmissionregistrationV1Api);
    await kc.makeApiClient(CoreV1Api).createNamespacedPodTemplate({
      namespace: NS,
      body: {
        metadata: { name: 'param', labels: { deny: 'a' } },
        template: { spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await bare?.stop();
  });

  /** The parameter changed: its label deny names another ConfigMap. */
  const deny = (name: string) =>
    kc
      .makeApiClient(CoreV1Api)
      .patchNamespacedPodTemplate(
        { name: 'param', namespace: NS, body: { metadata: { labels: { deny: name } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );

  /** An uninstall and install of the binding: deleted, seen gone (the ConfigMap passes), created, seen. */
  const deleteAndCreateBinding = async (denied: string) => {
    await admission.deleteValidatingAdmissionPolicyBinding({ name: POLICY });
    expect(await until(kc, denied, 'allowed')).toBe('allowed');
    await admission.createValidatingAdmissionPolicyBinding({ body: binding });
    expect(await until(kc, denied, 'refused')).toBe('refused');
  };

  it('is seen as it was until the API server restarts; a placeholder binding kept meanwhile keeps it live', async () => {
    await admission.createValidatingAdmissionPolicy({ body: policy });
    await admission.createValidatingAdmissionPolicyBinding({ body: binding });
    expect(await until(kc, 'a', 'refused')).toBe('refused');
    // Live: a change to the parameter shows at once.
    await deny('b');
    expect(await until(kc, 'b', 'refused')).toBe('refused');
    expect(await probe(kc, 'a')).toBe('allowed');

    // An uninstall and install: the API server keeps the parameter as it was and sees no change to it.
    await deleteAndCreateBinding('b');
    await deny('c');
    expect(await until(kc, 'c', 'refused', 10_000)).toBe('allowed');
    expect(await probe(kc, 'b')).toBe('refused');

    // A restart of the API server brings it back.
    await bare.cp.stopApiServer();
    await bare.cp.startApiServer();
    expect(await until(kc, 'c', 'refused')).toBe('refused');

    // The keeper first, then the same uninstall and install: every change still seen.
    await admission.createValidatingAdmissionPolicy({ body: keeperPolicy });
    await admission.createValidatingAdmissionPolicyBinding({ body: keeperBinding });
    await deleteAndCreateBinding('c');
    await deny('d');
    expect(await until(kc, 'd', 'refused')).toBe('refused');
    expect(await probe(kc, 'c')).toBe('allowed');
  }, 240_000);
});

// The chart's fix for the above: its parameter keeper (templates/parameter-keeper.yaml) is kept by
// `helm uninstall` (helm.sh/resource-policy: keep), so an uninstall and an install with a changed runner
// leave the tick's template policy comparing Jobs with the new runner. Without the keeper (deleted by hand
// between the two) the same steps leave the API server on the old runner, or on none, which is what makes
// this test able to fail.
describe("the chart's parameter keeper across helm uninstall and install", () => {
  const RELEASE = 'khrun';
  const KHRUN_NS = 'khrun';
  let bare: Awaited<ReturnType<typeof startBareControlPlane>>;
  let kc: KubeConfig;
  let helmBin: string;
  beforeAll(async () => {
    helmBin = await resolveHelm({
      cacheDir:
        process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
      buildDir: join(repoRoot, 'infra/build'),
      onProgress: (line) => console.log(`[helm] ${line}`),
    });
    bare = await startBareControlPlane(inject('hostIp'));
    kc = bare.cp.adminKubeConfig;
  }, 1_200_000);
  afterAll(async () => {
    await bare?.stop();
  });

  const helm = async (args: string[]) => {
    try {
      const { stdout, stderr } = await run(helmBin, [...args, `--kubeconfig=${bare.cp.kubeconfigPath}`]);
      return stdout + stderr;
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`helm ${args.join(' ')} failed: ${e.stdout ?? ''}${e.stderr || e.message}`);
    }
  };
  /** The chart installed with the runner image tag `tag` (no controllers here: nothing is waited for). */
  const install = (tag: string) =>
    helm([
      'install',
      RELEASE,
      join(repoRoot, CHART_DIR),
      '-n',
      KHRUN_NS,
      '--create-namespace',
      '--set',
      `image.tag=${tag}`,
    ]);

  /** The runner Job the tick makes from the current khrun-runner, with its image replaced by `image`. */
  async function tickJob(image?: string): Promise<V1Job> {
    const template = (
      await kc
        .makeApiClient(CoreV1Api)
        .readNamespacedPodTemplate({ name: 'khrun-runner', namespace: KHRUN_NS })
    ).template!;
    const spec = runJobSpec(
      template,
      { namespace: 'checks', name: 'c', timeoutMs: 60_000 },
      DEFAULT_RUN_JOB_OPTIONS,
    );
    if (image) for (const c of spec.template.spec!.containers) c.image = image;
    return {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'khrun-run-keeper', namespace: KHRUN_NS },
      spec,
    };
  }

  /**
   * Whether the template policy compares with the installed runner: as khrun-tick, its own Job is admitted
   * and the same Job with the image `other` is refused by khrun-tick-job-template (dry runs).
   */
  async function comparesWithInstalledRunner(tick: KubeConfig, other: string): Promise<boolean> {
    const batch = tick.makeApiClient(BatchV1Api);
    const answer = async (job: V1Job) => {
      try {
        await batch.createNamespacedJob({ namespace: KHRUN_NS, body: job, dryRun: 'All' });
        return 'allowed';
      } catch (error) {
        return String((error as { body?: unknown }).body ?? error);
      }
    };
    return (
      (await answer(await tickJob())) === 'allowed' &&
      (await answer(await tickJob(other))).includes('khrun-tick-job-template')
    );
  }
  const tickToken = () => serviceAccountKubeConfig(kc, KHRUN_NS, 'khrun-tick');
  const keeperExists = () =>
    kc
      .makeApiClient(AdmissionregistrationV1Api)
      .readValidatingAdmissionPolicyBinding({ name: 'khrun-parameter-keeper' })
      .then(
        () => true,
        () => false,
      );

  it('a reinstall with a changed runner is compared with the new runner; without the keeper, not', async () => {
    await install('1.0.0');
    const first = await tickToken();
    expect(
      await pollUntil(() => comparesWithInstalledRunner(first, 'ghcr.io/khrun/khrun:0.0.1'), 30_000),
    ).toBe(true);

    // Uninstall: every binding of the release goes but the keeper.
    await helm(['uninstall', RELEASE, '-n', KHRUN_NS]);
    expect(await keeperExists()).toBe(true);
    const bindings = await kc
      .makeApiClient(AdmissionregistrationV1Api)
      .listValidatingAdmissionPolicyBinding();
    expect(bindings.items.map((b) => b.metadata?.name)).toEqual(['khrun-parameter-keeper']);

    // Install again (adopting the kept keeper) with another runner: its Jobs are admitted, 1.0.0's refused.
    expect(await install('2.0.0')).toMatch(/STATUS: deployed/);
    const second = await tickToken();
    expect(
      await pollUntil(() => comparesWithInstalledRunner(second, 'ghcr.io/khrun/khrun:1.0.0'), 30_000),
    ).toBe(true);

    // The control: the keeper deleted between uninstall and install, as before the chart kept it. The API
    // server stays on 2.0.0's runner (or on none): 3.0.0's Jobs are refused, or 2.0.0's admitted.
    await helm(['uninstall', RELEASE, '-n', KHRUN_NS]);
    await kc
      .makeApiClient(AdmissionregistrationV1Api)
      .deleteValidatingAdmissionPolicyBinding({ name: 'khrun-parameter-keeper' });
    await install('3.0.0');
    const third = await tickToken();
    expect(
      await pollUntil(() => comparesWithInstalledRunner(third, 'ghcr.io/khrun/khrun:2.0.0'), 10_000),
    ).toBe(false);
  }, 240_000);

  it('installs beside a keeper it did not make (kubectl apply -k infra/parameter-keeper): renders none of its own', async () => {
    // Whatever the test before left (it may not have run): no release, no keeper.
    const gone = () => undefined;
    await helm(['uninstall', RELEASE, '-n', KHRUN_NS]).catch(gone);
    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    await admission.deleteValidatingAdmissionPolicyBinding({ name: 'khrun-parameter-keeper' }).catch(gone);
    await admission.deleteValidatingAdmissionPolicy({ name: 'khrun-parameter-keeper' }).catch(gone);
    // The kustomization's keeper, as kubectl would create it: no helm ownership on it.
    const docs = parseAllDocuments(
      await readFile(join(repoRoot, 'infra/parameter-keeper/keeper.yaml'), 'utf8'),
    );
    for (const doc of docs.map((d) => d.toJS())) {
      if (doc.kind === 'ValidatingAdmissionPolicy')
        await admission.createValidatingAdmissionPolicy({ body: doc });
      else await admission.createValidatingAdmissionPolicyBinding({ body: doc });
    }
    // Without the lookup helm refuses: "exists and cannot be imported into the current release".
    expect(await install('4.0.0')).toMatch(/STATUS: deployed/);
    expect(await helm(['get', 'manifest', RELEASE, '-n', KHRUN_NS])).not.toContain('khrun-parameter-keeper');
    const keeper = await admission.readValidatingAdmissionPolicyBinding({ name: 'khrun-parameter-keeper' });
    expect(keeper.metadata?.annotations?.['meta.helm.sh/release-name']).toBeUndefined();
  }, 240_000);
});

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHART_DIR, helmTemplate } from '../../infra/helm/render-deploy.ts';
import { readmeIsStale, renderReadme } from '../../infra/helm/render-readme.ts';
import { collisions, fixturesDir, kuberhealthyInstalls } from '../compat/kuberhealthy-installs.ts';
import type { ManifestObject } from '../compat/v2-manifests.ts';
import { byKey, helmBinary, helmDocsBinary, objectsOf, runHelm } from './helpers/helm.ts';
import { repoRoot } from './helpers/khrun.ts';
import { startBareControlPlane } from './helpers/second-control-plane.ts';

// The chart as an installer, with the real helm (infra/build/helm) and helm-docs (infra/build/helm-docs):
// each component's pod placement, priority, labels and annotations; the server's PodDisruptionBudget; the
// Kubernetes version and APIs it needs (refused with what to do, against a real kube-apiserver that does
// not serve ValidatingAdmissionPolicy); every object named apart from Kuberhealthy's, whatever the
// options; the README's values table as helm-docs writes it from values.yaml. `helm test` runs in
// helm.test.ts (the install there) and beside-kuberhealthy.test.ts.

let helm: string;
let helmDocs: string;
const chart = `${repoRoot}/${CHART_DIR}`;

beforeAll(async () => {
  helm = await helmBinary();
  helmDocs = await helmDocsBinary();
}, 1_200_000);

type PodSpec = Record<string, unknown> & { containers: Array<Record<string, unknown>> };
type PodTemplate = { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } };

/** The pod template (metadata and spec) of each of khrun's components in a rendering. */
function pods(objects: Map<string, KubernetesObject>, namespace: string) {
  type Pod = PodTemplate & { spec: PodSpec };
  const get = (key: string): unknown => {
    const o = objects.get(key);
    if (!o) throw new Error(`${key} is not in the rendering: ${[...objects.keys()].join(', ')}`);
    return o;
  };
  const fromCronJob = (name: string) =>
    (get(`CronJob/${namespace}/${name}`) as { spec: { jobTemplate: { spec: { template: Pod } } } }).spec
      .jobTemplate.spec.template;
  return {
    runner: () => (get(`PodTemplate/${namespace}/khrun-runner`) as { template: Pod }).template,
    tick: () => fromCronJob('khrun-tick'),
    sync: () => fromCronJob('khrun-sync'),
    server: () => (get(`Deployment/${namespace}/khrun-server`) as { spec: { template: Pod } }).spec.template,
  };
}

describe('the chart as an installer', () => {
  it("places, prioritizes, labels and annotates each component's pods: its own values, else the chart-wide ones", async () => {
    const global = [
      'podLabels.team=platform,podAnnotations.owner=sre',
      'priorityClassName=khrun-default,nodeSelector.pool=system',
      'tolerations[0].key=dedicated,tolerations[0].operator=Exists',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
    ];
    const own = [
      // The runner's own: its labels win key by key, its placement replaces the chart-wide one; it cannot
      // change the selector labels.
      'runner.podLabels.team=checks,runner.podLabels.app\\.kubernetes\\.io/component=evil',
      'runner.podAnnotations.cost=checks,runner.priorityClassName=khrun-checks',
      'runner.nodeSelector.pool=checks,runner.tolerations[0].key=checks,runner.tolerations[0].operator=Exists',
      'server.enabled=true,server.replicas=2,server.priorityClassName=khrun-critical,server.podLabels.tier=web',
      'server.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1',
      'server.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname',
    ];
    const rendered = byKey(
      await helmTemplate(helm, repoRoot, { namespace: 'ops', set: [...global, ...own] }),
    );
    const p = pods(rendered, 'ops');
    const zone = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }],
        },
      },
    };

    expect(p.runner().metadata).toEqual({
      labels: { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'runner', team: 'checks' },
      annotations: { owner: 'sre', cost: 'checks' },
    });
    expect(p.runner().spec).toMatchObject({
      priorityClassName: 'khrun-checks',
      nodeSelector: { pool: 'checks' },
      tolerations: [{ key: 'checks', operator: 'Exists' }],
      affinity: zone,
    });

    const tick = p.tick();
    expect(tick.metadata).toEqual({
      labels: { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'tick', team: 'platform' },
      annotations: { owner: 'sre' },
    });
    expect(tick.spec).toMatchObject({
      priorityClassName: 'khrun-default',
      nodeSelector: { pool: 'system' },
      tolerations: [{ key: 'dedicated', operator: 'Exists' }],
      affinity: zone,
    });

    expect(p.server().metadata.labels).toEqual({
      'app.kubernetes.io/name': 'khrun',
      'app.kubernetes.io/component': 'server',
      team: 'platform',
      tier: 'web',
    });
    expect(p.server().spec).toMatchObject({
      priorityClassName: 'khrun-critical',
      nodeSelector: { pool: 'system' },
    });
    expect(p.server().spec.affinity).toEqual({
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname' } },
        ],
      },
    });
    // The Deployment, Service and PDB still select exactly the server's pods.
    const selector = { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'server' };
    expect(rendered.get('Deployment/ops/khrun-server')).toMatchObject({
      spec: { selector: { matchLabels: selector } },
    });
    expect(rendered.get('Service/ops/khrun-server')).toMatchObject({ spec: { selector } });

    // sync's pod, in sync mode.
    const sync = pods(
      byKey(
        await helmTemplate(helm, repoRoot, {
          namespace: 'ops',
          set: [...global, 'mode=sync', 'sync.priorityClassName=khrun-sync,sync.podAnnotations.owner=sync'],
        }),
      ),
      'ops',
    ).sync();
    expect(sync.metadata.annotations).toEqual({ owner: 'sync' });
    expect(sync.spec).toMatchObject({ priorityClassName: 'khrun-sync', nodeSelector: { pool: 'system' } });

    // Nothing set: no such field at all (the defaults render what infra/deploy holds).
    const plain = pods(
      byKey(await helmTemplate(helm, repoRoot, { namespace: 'ops', set: ['server.enabled=true'] })),
      'ops',
    );
    for (const pod of [plain.runner(), plain.tick(), plain.server()]) {
      expect(pod.metadata.annotations).toBeUndefined();
      for (const field of ['priorityClassName', 'nodeSelector', 'tolerations', 'affinity'])
        expect(pod.spec[field], field).toBeUndefined();
    }
  });

  it('makes a PodDisruptionBudget for the server when it runs more than one pod, and only then', async () => {
    const pdbs = async (set: string[]) =>
      [...byKey(await helmTemplate(helm, repoRoot, { namespace: 'ops', set })).keys()].filter((k) =>
        k.startsWith('PodDisruptionBudget/'),
      );
    // The defaults run the server with two pods, so they make one; no server, or one pod, none.
    expect(await pdbs([])).toEqual(['PodDisruptionBudget/ops/khrun-server']);
    expect(await pdbs(['server.enabled=false'])).toEqual([]);
    expect(await pdbs(['server.enabled=true', 'server.replicas=1'])).toEqual([]);
    expect(await pdbs(['server.enabled=true', 'server.replicas=2'])).toEqual([
      'PodDisruptionBudget/ops/khrun-server',
    ]);
  });

  it('refuses a Kubernetes older than 1.30 (kubeVersion), and takes 1.30', async () => {
    await expect(runHelm(helm, ['template', 'khrun', chart, '--kube-version', '1.29.9'])).rejects.toThrow(
      /chart requires kubeVersion: >=1\.30\.0-0 which is incompatible with Kubernetes v1\.29\.9/,
    );
    expect(await runHelm(helm, ['template', 'khrun', chart, '--kube-version', '1.30.0'])).toContain(
      'kind: ValidatingAdmissionPolicy',
    );
  });

  it("names no object as Kuberhealthy v2.7.1's or v3.0.0's manifests do, whatever the options, in its namespace or theirs", async () => {
    const theirs = kuberhealthyInstalls(fixturesDir);
    const renders = [
      ['server.enabled=true', 'server.replicas=3', 'runner.reportToServer=true'],
      [
        'mode=sync',
        'server.enabled=true',
        'server.allowUnsignedReports=true',
        'namespaces={kuberhealthy,team-a}',
      ],
      ['admissionPolicy.enabled=false', 'server.enabled=true', 'server.reportKey.existingSecret=mine'],
      [
        'server.reports=false',
        'monitoring.podMonitor.enabled=true',
        'monitoring.rules.enabled=true',
        'monitoring.dashboard.enabled=true',
      ],
    ];
    let seen = 0;
    for (const namespace of ['khrun', 'kuberhealthy']) {
      for (const set of renders) {
        const out = await runHelm(helm, [
          'template',
          'khrun',
          chart,
          '--include-crds',
          '-n',
          namespace,
          // The monitoring objects render only where the Prometheus Operator's API is served.
          '--api-versions',
          'monitoring.coreos.com/v1',
          ...set.flatMap((s) => ['--set', s]),
        ]);
        const objects = objectsOf(out);
        seen += objects.length;
        const found = collisions(objects as ManifestObject[], theirs);
        expect(
          found.filter((c) => !c.identicalCrd),
          `${namespace} ${set.join(' ')}`,
        ).toEqual([]);
        // The CRDs alone, shared by design and Kuberhealthy's field for field.
        expect(found.map((c) => c.key.split('/')[0])).toEqual(
          Array(found.length).fill('CustomResourceDefinition'),
        );
      }
    }
    expect(seen).toBeGreaterThan(200);
  });

  it("README.md is helm-docs' rendering of README.md.gotmpl and values.yaml, every value described", async () => {
    const rendered = await renderReadme(helmDocs, repoRoot);
    // The table lists every value of values.yaml (a few picked from each block).
    for (const key of [
      'image.repository',
      'mode',
      'admissionPolicy.enabled',
      'runner.priorityClassName',
      'tick.batchSize',
      'server.replicas',
    ])
      expect(rendered).toMatch(new RegExp(`^\\| ${key.replaceAll('.', '\\.')} \\| `, 'm'));
    expect(await readmeIsStale(helmDocs, repoRoot), 'run: npx tsx infra/helm/render-readme.ts').toBe(false);
  });
});

describe('against a kube-apiserver that does not serve ValidatingAdmissionPolicy', () => {
  let bare: Awaited<ReturnType<typeof startBareControlPlane>>;
  beforeAll(async () => {
    // The resources of admissionregistration.k8s.io/v1 turned off one by one, as on a cluster older than
    // 1.30 (which serves the webhooks of that group/version, not the policies).
    bare = await startBareControlPlane(inject('hostIp'), {
      apiServerArgs: [
        '--runtime-config=admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false',
        // Its admission plugin watches them and would keep the API server from becoming ready.
        '--disable-admission-plugins=ValidatingAdmissionPolicy',
      ],
    });
  }, 120_000);
  afterAll(async () => {
    await bare?.stop();
  });

  it('stops the install with what to do; with admissionPolicy.enabled=false it renders, and the suite cluster takes the defaults', async () => {
    const template = (extra: string[], kubeconfig: string) =>
      runHelm(helm, ['template', 'khrun', chart, '-n', 'default', '--validate', ...extra], kubeconfig);
    await expect(template([], bare.cp.kubeconfigPath)).rejects.toThrow(
      /admissionPolicy\.enabled needs the API admissionregistration\.k8s\.io\/v1\/ValidatingAdmissionPolicy, which this cluster \(Kubernetes v1\.\d+\.\d+\) does not serve \(Kubernetes 1\.30 or later\); on an older cluster set admissionPolicy\.enabled=false/,
    );
    const without = await template(['--set', 'admissionPolicy.enabled=false'], bare.cp.kubeconfigPath);
    expect(without).toContain('kind: CronJob');
    expect(without).not.toContain('kind: ValidatingAdmissionPolicy');
    // The suite's cluster serves them: the defaults render against it, as an install would (lookup reads the
    // cluster). Another file may have left the parameter keeper there (helm.test.ts's release keeps it,
    // deploy.test.ts applies infra/parameter-keeper): the chart then renders none of its own.
    // --take-ownership: objects other files left on the shared cluster are not this test's subject (a dry
    // run adopts nothing).
    const suite = await template(['--dry-run=server', '--take-ownership'], inject('kubeconfigPath'));
    expect(suite).toContain('kind: ValidatingAdmissionPolicy');
  });
});

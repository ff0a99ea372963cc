import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { resolveHelm } from '@khrun/devkit/local/binaries.ts';
import {
  ApiextensionsV1Api,
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  type KubernetesObject,
  RbacAuthorizationV1Api,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import { dump, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  CHART_DIR,
  DEPLOY_MONITORING_SET,
  DEPLOY_NAMESPACE,
  DEPLOY_REPORT_KEY_SECRET,
  helmTemplate,
  MONITORING_API,
  staleFiles,
} from '../../infra/helm/render-deploy.ts';
import { notifyConfig } from '../../lib/config/notify-options.ts';
import { reportKey } from '../../lib/config/report-key.ts';
import { NO_FLAGS } from '../../lib/config/setting.ts';
import { isNotFound } from '../../lib/kube/errors.ts';
import { readDispatchClaim, readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, uniqueName, waitFor } from './helpers/cluster.ts';
import {
  buildTestBundles,
  kubectl,
  reportKeyAnswers,
  reportKeyOfSecret,
  SHIPPED_IMAGE,
  serviceAccountKubeConfig,
  waitForHttp,
} from './helpers/deploy.ts';
import { createCheck, repoRoot } from './helpers/khrun.ts';

// The Helm chart (infra/helm/khrun) with a real helm (v3.22.0, built from the Go module proxy through
// infra/build/helm and cached like kubectl): lint, the kustomization rendered from it, the chart and the
// kustomization compared object by object, and an install on the local cluster that records a check
// through the tick → Job → runner path with the report server beside it (its key Secret kept by an
// upgrade), then an uninstall that removes what the chart made.

const run = promisify(execFile);
const kc = adminKubeConfig();
let helmBin: string;

async function helm(args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(helmBin, [...args, `--kubeconfig=${inject('kubeconfigPath')}`], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`helm ${args.join(' ')} failed: ${e.stdout ?? ''}${e.stderr || e.message}`);
  }
}

const chart = join(repoRoot, CHART_DIR);

beforeAll(async () => {
  // Built here, not in the global setup, so only runs that test the chart pay for it: about 3 minutes on
  // 2 idle cores the first time (8 minutes measured while kube-apiserver was building beside it).
  const startedMs = Date.now();
  helmBin = await resolveHelm({
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(repoRoot, 'infra/build'),
    onProgress: (line) => console.log(`[helm] ${line}`),
  });
  console.log(`[helm] ${helmBin} ready in ${Math.round((Date.now() - startedMs) / 1000)}s`);
  await buildTestBundles();
}, 1_200_000);

/**
 * The objects of a multi-document YAML stream, as plain data (js-yaml, client-node's own parser, without
 * its conversion to typed models, which would drop fields it does not know and so hide a difference).
 */
function objectsOf(yaml: string): KubernetesObject[] {
  return (loadAll(yaml) as Array<KubernetesObject | null>).filter((doc): doc is KubernetesObject =>
    Boolean(doc?.kind),
  );
}

/** Objects keyed by kind/namespace/name, for comparing renderings. */
function byKey(yaml: string): Map<string, KubernetesObject> {
  return new Map(
    objectsOf(yaml).map((o) => [`${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o]),
  );
}

describe('the chart', () => {
  it('helm lint --strict finds nothing for the defaults and every option', async () => {
    const cases = [
      [],
      ['--set', 'mode=sync'],
      ['--set', 'server.enabled=true', '--set', 'createNamespace=true'],
      ['--set', 'server.enabled=false'],
      ['--set', 'server.reports=false'],
      ['--set', 'server.reports=false,mode=sync'],
      ['--set', 'server.enabled=true,server.allowUnsignedReports=true'],
      ['--set', 'server.enabled=true,runner.reportToServer=true'],
      ['--set', 'server.enabled=true,runner.reportToServer=true,server.reportKey.existingSecret=mine'],
      ['--set', 'server.enabled=true,runner.reportToServer=true,server.allowUnsignedReports=true,mode=sync'],
      [
        '--set',
        'server.enabled=true,notifications.existingSecret=khrun-notify,notifications.key=notify.json',
      ],
      [
        '--set',
        'namespaces={team-a,team-b}',
        '--set',
        'image.repository=ghcr.io/acme/khrun,image.tag=1.2.3,image.pullPolicy=Always',
        '--set',
        'imagePullSecrets[0].name=regcred,nodeSelector.pool=system',
        '--set',
        'tolerations[0].key=dedicated,tolerations[0].operator=Exists',
        '--set',
        'runner.extraEnv[0].name=KH_EXTERNAL_REPORTING_URL,runner.extraEnv[0].value=http://x',
      ],
      [
        '--set',
        'server.enabled=true,server.replicas=3,podLabels.team=a,podAnnotations.note=x,priorityClassName=high',
        '--set',
        'tick.podLabels.tier=t,tick.priorityClassName=tick-high,server.affinity.podAntiAffinity.x=y',
        '--set',
        'runner.nodeSelector.pool=checks,runner.tolerations[0].key=k,sync.podAnnotations.a=b',
      ],
    ];
    for (const args of cases) {
      const out = await helm(['lint', chart, '--strict', ...args]);
      expect(out, args.join(' ')).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      expect(out, args.join(' ')).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it('the values schema rejects what the chart cannot render', async () => {
    await expect(helm(['lint', chart, '--set', 'mode=cron'])).rejects.toThrow(
      /at '\/mode': value must be one of 'tick', 'sync'/,
    );
    await expect(helm(['lint', chart, '--set', 'namespaces={Not_A_Namespace}'])).rejects.toThrow(
      /namespaces/,
    );
    await expect(helm(['lint', chart, '--set', 'tick.resource.cpu=1'])).rejects.toThrow(/resource/);
    await expect(
      helm(['lint', chart, '--set', 'server.reportKey.existingSecret=Not_A_Secret']),
    ).rejects.toThrow(/existingSecret/);
  });

  it("infra/deploy's resource files and the chart's CRDs are what the chart and infra/crds make them", async () => {
    // One source: the templates. A file edited by hand instead of its template fails here.
    expect(await staleFiles(helmBin, repoRoot), 'run: npx tsx infra/helm/render-deploy.ts').toEqual([]);
  });

  it.each([
    // kustomize cannot make a random key: the base's server takes no reports; the serve component turns
    // them on with the user's Secret khrun-report-key.
    { components: [], set: ['server.reports=false'] },
    { components: ['serve'], set: [`server.reportKey.existingSecret=${DEPLOY_REPORT_KEY_SECRET}`] },
    { components: ['sync'], set: ['mode=sync', 'server.reports=false'] },
    {
      components: ['serve', 'sync'],
      set: [`server.reportKey.existingSecret=${DEPLOY_REPORT_KEY_SECRET}`, 'mode=sync'],
    },
    {
      components: ['monitoring'],
      set: ['server.reports=false', ...DEPLOY_MONITORING_SET],
      apiVersions: [MONITORING_API],
    },
    {
      components: ['serve', 'monitoring'],
      set: [`server.reportKey.existingSecret=${DEPLOY_REPORT_KEY_SECRET}`, ...DEPLOY_MONITORING_SET],
      apiVersions: [MONITORING_API],
    },
  ] as Array<{ components: string[]; set: string[]; apiVersions?: string[] }>)(
    'kubectl kustomize with components $components = helm template with $set, object by object',
    async ({ components, set, apiVersions }) => {
      const dir = join(repoRoot, '.khrun/test-overlays', `helm-${components.join('-') || 'base'}`);
      await mkdir(dir, { recursive: true });
      const rel = (p: string) => relative(dir, join(repoRoot, p));
      await writeFile(
        join(dir, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          'resources:',
          `  - ${rel('infra/deploy')}`,
          ...(components.length
            ? ['components:', ...components.map((c) => `  - ${rel(`infra/deploy/components/${c}`)}`)]
            : []),
          '',
        ].join('\n'),
      );
      const kustomized = byKey(await kubectl(['kustomize', dir]));
      // The kustomization also makes the namespace (Helm: --create-namespace); `helm test`'s objects are
      // the chart's only (templates/tests). The CRDs are a step of their own in both (next test).
      const helmed = byKey(
        await helmTemplate(helmBin, repoRoot, {
          set: ['createNamespace=true', ...set],
          namespace: DEPLOY_NAMESPACE,
          apiVersions,
        }),
      );
      // The parameter keeper is a step of its own in the kustomization (infra/parameter-keeper), so that
      // `kubectl delete -k infra/deploy` leaves it, as `helm uninstall` does (resource-policy keep).
      const keeper = byKey(await kubectl(['kustomize', join(repoRoot, 'infra/parameter-keeper')]));
      const helmedKeeper = new Map<string, KubernetesObject>();
      for (const [key, object] of helmed) {
        const component = object.metadata?.labels?.['app.kubernetes.io/component'];
        if (component === 'parameter-keeper') helmedKeeper.set(key, object);
        if (component === 'test' || component === 'parameter-keeper') helmed.delete(key);
      }
      expect([...helmedKeeper.keys()].sort()).toEqual([...keeper.keys()].sort());
      for (const [key, object] of keeper) expect(helmedKeeper.get(key), key).toEqual(object);
      expect(keeper.size).toBe(2);
      expect([...helmed.keys()].sort()).toEqual([...kustomized.keys()].sort());
      for (const [key, object] of kustomized) expect(helmed.get(key), key).toEqual(object);
      // Each mode has exactly its scheduler.
      expect(kustomized.has(`CronJob/${DEPLOY_NAMESPACE}/khrun-tick`)).toBe(!components.includes('sync'));
      expect(kustomized.has(`CronJob/${DEPLOY_NAMESPACE}/khrun-sync`)).toBe(components.includes('sync'));
      expect([...kustomized.keys()].filter((k) => k.startsWith('CustomResourceDefinition/'))).toEqual([]);
      // The server is always there; it takes reports only with the serve component.
      const server = kustomized.get(`Deployment/${DEPLOY_NAMESPACE}/khrun-server`) as unknown as {
        spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
      };
      expect(server.spec.template.spec.containers[0]?.args.includes('--no-reports')).toBe(
        !components.includes('serve'),
      );
    },
  );

  it('kubectl kustomize infra/crds = the CRDs of the chart (crds/), object by object', async () => {
    const kustomized = byKey(await kubectl(['kustomize', join(repoRoot, 'infra/crds')]));
    const helmed = byKey(await crdsOfChart());
    expect([...kustomized.keys()].sort()).toEqual([...helmed.keys()].sort());
    expect(kustomized.size).toBe(4);
    for (const [key, object] of kustomized) expect(helmed.get(key), key).toEqual(object);
  });

  it('applies its values: release namespace, image, scope, resources, env, placement, replicas', async () => {
    const objects = byKey(
      await helmTemplate(helmBin, repoRoot, {
        namespace: 'monitoring',
        set: [
          'server.enabled=true',
          'server.replicas=3',
          'image.repository=ghcr.io/acme/khrun,image.tag=1.2.3,image.pullPolicy=Always',
          'namespaces={team-a,team-b}',
          'tick.resources.requests.cpu=100m',
          'tick.extraEnv[0].name=KHRUN_FIRST_RUN_JITTER,tick.extraEnv[0].value=0s',
          'nodeSelector.pool=system',
        ],
      }),
    );
    for (const [key, object] of objects) {
      // Cluster-scoped objects, and the runner's RoleBindings in the namespaces of checks.
      if (/^(Cluster|ValidatingAdmissionPolicy)|^RoleBinding\/team-/.test(key)) continue;
      expect(object.metadata?.namespace, key).toBe('monitoring');
    }
    // With namespaces set, the runner is bound there only: a RoleBinding each, no ClusterRoleBinding.
    expect(objects.has('ClusterRoleBinding//khrun-runner')).toBe(false);
    for (const namespace of ['team-a', 'team-b']) {
      const binding = objects.get(`RoleBinding/${namespace}/khrun-runner`) as {
        roleRef: unknown;
        subjects: unknown[];
      };
      expect(binding.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'khrun-runner',
      });
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'khrun-runner', namespace: 'monitoring' },
      ]);
    }
    const cron = objects.get('CronJob/monitoring/khrun-tick') as {
      spec: { jobTemplate: { spec: { template: { spec: Record<string, unknown> } } } };
    };
    const tickPod = cron.spec.jobTemplate.spec.template.spec as {
      nodeSelector: unknown;
      containers: Array<{ image: string; imagePullPolicy: string; env: unknown[]; resources: unknown }>;
    };
    expect(tickPod.nodeSelector).toEqual({ pool: 'system' });
    expect(tickPod.containers[0]).toMatchObject({
      image: 'ghcr.io/acme/khrun:1.2.3',
      imagePullPolicy: 'Always',
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '192Mi' } },
    });
    expect(tickPod.containers[0]?.env).toEqual(
      expect.arrayContaining([
        { name: 'KHRUN_NAMESPACES', value: 'team-a,team-b' },
        { name: 'KHRUN_FIRST_RUN_JITTER', value: '0s' },
      ]),
    );
    const deployment = objects.get('Deployment/monitoring/khrun-server') as {
      spec: { replicas: number; template: { spec: { containers: Array<{ env: unknown[] }> } } };
    };
    expect(deployment.spec.replicas).toBe(3);
    // More than one server: a PodDisruptionBudget over its pods, one at a time.
    expect(objects.get('PodDisruptionBudget/monitoring/khrun-server')).toMatchObject({
      apiVersion: 'policy/v1',
      spec: {
        maxUnavailable: 1,
        selector: {
          matchLabels: { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'server' },
        },
      },
    });
    expect(deployment.spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'KHRUN_NAMESPACES',
      value: 'team-a,team-b',
    });
  });

  it('the report key: a Secret of the chart (random) or yours, mounted by the server and with runner.reportToServer by the runners; unsigned reports and the pod list only when chosen', async () => {
    const render = async (set: string[], namespace = 'monitoring') =>
      byKey(await helmTemplate(helmBin, repoRoot, { namespace, set }));
    const keyFile = '/var/run/khrun-report-key/key';
    const keyVolume = (secretName: string) => ({
      name: 'report-key',
      secret: { secretName, items: [{ key: 'key', path: 'key' }] },
    });
    const keyMount = { name: 'report-key', mountPath: '/var/run/khrun-report-key', readOnly: true };

    // Default server: the chart's Secret, a random key that the server's own validation takes.
    const signed = await render(['server.enabled=true']);
    const secret = signed.get('Secret/monitoring/khrun-report-key') as {
      metadata: { annotations?: Record<string, string> };
      type: string;
      data: Record<string, string>;
    };
    expect(secret, 'Secret khrun-report-key').toBeDefined();
    expect(secret.type).toBe('Opaque');
    expect(Object.keys(secret.data)).toEqual(['key']);
    // Kept by `helm uninstall`, so that a reinstall keeps the key the runners and servers share.
    expect(secret.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    const key = Buffer.from(secret.data.key!, 'base64').toString('utf8');
    const dir = await mkdtemp(join(tmpdir(), 'khrun-helm-key-'));
    try {
      // As the server reads it: the mounted file named by KHRUN_REPORT_KEY_FILE.
      await writeFile(join(dir, 'key'), key);
      const input = { flags: {}, env: { KHRUN_REPORT_KEY_FILE: join(dir, 'key') }, flagLabel: NO_FLAGS };
      expect(reportKey(input)?.bytes.toString('utf8')).toBe(key);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(key).toMatch(/^[A-Za-z0-9]{64}$/);
    // Random: `helm template` has no cluster to look an existing key up in, so each rendering makes one.
    const again = (await render(['server.enabled=true'])).get('Secret/monitoring/khrun-report-key') as {
      data: Record<string, string>;
    };
    expect(again.data.key).not.toBe(secret.data.key);

    type Pod = {
      volumes?: unknown[];
      containers: Array<{ env?: Array<{ name: string; value?: string }>; volumeMounts?: unknown[] }>;
    };
    const serverPod = (objects: Map<string, KubernetesObject>) =>
      (objects.get('Deployment/monitoring/khrun-server') as unknown as { spec: { template: { spec: Pod } } })
        .spec.template.spec;
    const runnerPod = (objects: Map<string, KubernetesObject>) =>
      (objects.get('PodTemplate/monitoring/khrun-runner') as unknown as { template: { spec: Pod } }).template
        .spec;
    const envOf = (pod: Pod) => new Map((pod.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    const serverRules = (objects: Map<string, KubernetesObject>) =>
      (objects.get('ClusterRole//khrun-server') as unknown as { rules: Array<{ resources: string[] }> })
        .rules;

    const server = serverPod(signed);
    expect(envOf(server).get('KHRUN_REPORT_KEY_FILE')).toBe(keyFile);
    expect(envOf(server).has('KHRUN_ALLOW_UNSIGNED_REPORTS')).toBe(false);
    expect(server.volumes).toEqual([keyVolume('khrun-report-key')]);
    expect(server.containers[0]?.volumeMounts).toEqual([keyMount]);
    expect(serverRules(signed).flatMap((r) => r.resources)).not.toContain('pods');
    // Without runner.reportToServer each runner hosts its run's endpoint, with a key of its own.
    expect(runnerPod(signed).volumes).toBeUndefined();
    expect(envOf(runnerPod(signed)).has('KH_EXTERNAL_REPORTING_URL')).toBe(false);
    expect(envOf(runnerPod(signed)).has('KHRUN_REPORT_KEY_FILE')).toBe(false);

    // A Secret of the operator's: mounted by name, none made.
    const theirs = await render(['server.enabled=true', 'server.reportKey.existingSecret=ops-report-key']);
    expect([...theirs.keys()].filter((k) => k.startsWith('Secret/'))).toEqual([]);
    expect(serverPod(theirs).volumes).toEqual([keyVolume('ops-report-key')]);

    // Unsigned, chosen: no key, the opt-in, and the pod list that identifies an unsigned report.
    const unsigned = await render(['server.enabled=true', 'server.allowUnsignedReports=true']);
    expect([...unsigned.keys()].filter((k) => k.startsWith('Secret/'))).toEqual([]);
    expect(envOf(serverPod(unsigned)).get('KHRUN_ALLOW_UNSIGNED_REPORTS')).toBe('true');
    expect(envOf(serverPod(unsigned)).has('KHRUN_REPORT_KEY_FILE')).toBe(false);
    expect(serverPod(unsigned).volumes).toBeUndefined();
    expect(serverPod(unsigned).containers[0]?.volumeMounts).toBeUndefined();
    expect(serverRules(unsigned)).toContainEqual({ apiGroups: [''], resources: ['pods'], verbs: ['list'] });

    // runner.reportToServer: the release's Service khrun-server (port 80), not Kuberhealthy's, and the
    // server's key mounted as the server mounts it; the tick's Jobs copy the template (policy 5 compares
    // them to it, whole).
    const url = 'http://khrun-server.monitoring.svc.cluster.local/externalCheckStatus';
    const reporting = await render(['server.enabled=true', 'runner.reportToServer=true']);
    const service = reporting.get('Service/monitoring/khrun-server') as unknown as {
      spec: { ports: Array<{ port: number }> };
    };
    expect(service.spec.ports[0]?.port).toBe(80);
    const runner = runnerPod(reporting);
    expect(envOf(runner).get('KH_EXTERNAL_REPORTING_URL')).toBe(url);
    expect(envOf(runner).get('KHRUN_REPORT_KEY_FILE')).toBe(keyFile);
    expect(runner.volumes).toEqual([keyVolume('khrun-report-key')]);
    expect(runner.containers[0]?.volumeMounts).toEqual([keyMount]);
    const unsignedReporting = runnerPod(
      await render(['server.enabled=true', 'runner.reportToServer=true', 'server.allowUnsignedReports=true']),
    );
    expect(envOf(unsignedReporting).get('KH_EXTERNAL_REPORTING_URL')).toBe(url);
    expect(envOf(unsignedReporting).has('KHRUN_REPORT_KEY_FILE')).toBe(false);
    expect(unsignedReporting.volumes).toBeUndefined();

    // Refused: no server to report to; sync's runner pods in namespaces the key Secret is not in.
    await expect(render(['runner.reportToServer=true', 'server.enabled=false'])).rejects.toThrow(
      /runner\.reportToServer needs server\.enabled=true/,
    );
    await expect(render(['server.enabled=true', 'runner.reportToServer=true', 'mode=sync'])).rejects.toThrow(
      /runner\.reportToServer needs mode=tick \(or server\.allowUnsignedReports=true\)/,
    );
  });

  it('the server is on by default, status and metrics with or without reports; a server without reports has no key and refuses what needs one', async () => {
    const render = async (set: string[]) =>
      byKey(await helmTemplate(helmBin, repoRoot, { namespace: 'monitoring', set }));
    type Server = {
      spec: {
        template: {
          spec: {
            volumes?: unknown[];
            containers: Array<{ args: string[]; env: Array<{ name: string }>; volumeMounts?: unknown[] }>;
          };
        };
      };
    };
    const serverOf = (objects: Map<string, KubernetesObject>) =>
      objects.get('Deployment/monitoring/khrun-server') as unknown as Server | undefined;

    const defaults = await render([]);
    const withReports = serverOf(defaults)!.spec.template.spec;
    expect(withReports.containers[0]?.args).toEqual(['serve', '--port', '8080', '--drain-seconds', '15']);
    expect(withReports.containers[0]?.env.map((e) => e.name)).toContain('KHRUN_REPORT_KEY_FILE');
    expect(defaults.has('Secret/monitoring/khrun-report-key')).toBe(true);
    expect(defaults.has('Service/monitoring/khrun-server')).toBe(true);

    const statusOnly = await render(['server.reports=false']);
    const server = serverOf(statusOnly)!.spec.template.spec;
    expect(server.containers[0]?.args).toEqual([
      'serve',
      '--port',
      '8080',
      '--drain-seconds',
      '15',
      '--no-reports',
    ]);
    expect(server.containers[0]?.env.map((e) => e.name)).toEqual(['POD_NAME']);
    expect(server.volumes).toBeUndefined();
    expect(server.containers[0]?.volumeMounts).toBeUndefined();
    expect([...statusOnly.keys()].filter((k) => k.startsWith('Secret/'))).toEqual([]);
    // No pod list: that is for unsigned reports only.
    const rules = (
      statusOnly.get('ClusterRole//khrun-server') as unknown as { rules: Array<{ resources: string[] }> }
    ).rules;
    expect(rules.flatMap((r) => r.resources)).not.toContain('pods');

    expect((await render(['server.enabled=false'])).has('Deployment/monitoring/khrun-server')).toBe(false);
    await expect(render(['server.reports=false', 'runner.reportToServer=true'])).rejects.toThrow(
      /runner\.reportToServer needs server\.reports=true/,
    );
    await expect(render(['server.reports=false', 'server.allowUnsignedReports=true'])).rejects.toThrow(
      /server\.allowUnsignedReports needs server\.reports=true/,
    );
  });

  it('monitoring: off by default; refused without the Prometheus Operator API, saying so; a ServiceMonitor or PodMonitor that selects the server and keeps its labels, the rules and the dashboard', async () => {
    const render = async (set: string[], apiVersions?: string[]) =>
      byKey(await helmTemplate(helmBin, repoRoot, { namespace: 'monitoring', set, apiVersions }));
    const api = [MONITORING_API];
    const defaults = await render([]);
    for (const key of [
      'ServiceMonitor/monitoring/khrun',
      'PodMonitor/monitoring/khrun',
      'PrometheusRule/monitoring/khrun',
      'ConfigMap/monitoring/khrun-dashboard',
    ])
      expect(defaults.has(key), key).toBe(false);
    // Even where the API is served: each is asked for by its value.
    expect([...(await render([], api)).keys()].filter((k) => /Monitor|PrometheusRule/.test(k))).toEqual([]);

    for (const value of [
      'monitoring.serviceMonitor.enabled',
      'monitoring.podMonitor.enabled',
      'monitoring.rules.enabled',
    ]) {
      await expect(render([`${value}=true`])).rejects.toThrow(
        new RegExp(
          `${value.replaceAll('.', '\\.')} needs the Prometheus Operator's CRDs \\(monitoring\\.coreos\\.com/v1.*` +
            'pass --api-versions monitoring\\.coreos\\.com/v1',
        ),
      );
    }
    await expect(
      render(['monitoring.serviceMonitor.enabled=true', 'monitoring.podMonitor.enabled=true'], api),
    ).rejects.toThrow(/choose one, or every series is scraped twice/);
    await expect(
      render(['monitoring.serviceMonitor.enabled=true', 'server.enabled=false'], api),
    ).rejects.toThrow(/monitoring\.serviceMonitor\.enabled needs server\.enabled=true/);

    type Endpoint = {
      port: string;
      path: string;
      interval: string;
      honorLabels: boolean;
      relabelings: unknown[];
    };
    type Monitor = {
      metadata: { labels: Record<string, string> };
      spec: {
        namespaceSelector: unknown;
        selector: { matchLabels: Record<string, string> };
        endpoints?: Endpoint[];
        podMetricsEndpoints?: Endpoint[];
      };
    };
    const endpoint = {
      port: 'http',
      path: '/metrics',
      interval: '30s',
      honorLabels: true,
      relabelings: [{ action: 'replace', targetLabel: 'job', replacement: 'khrun' }],
    };
    const sm = await render(
      ['monitoring.serviceMonitor.enabled=true', 'monitoring.serviceMonitor.labels.release=kps'],
      api,
    );
    const serviceMonitor = sm.get('ServiceMonitor/monitoring/khrun') as unknown as Monitor;
    expect(serviceMonitor.metadata.labels).toMatchObject({ release: 'kps' });
    expect(serviceMonitor.spec.namespaceSelector).toEqual({ matchNames: ['monitoring'] });
    expect(serviceMonitor.spec.endpoints).toEqual([endpoint]);
    // It selects the server's Service, and nothing else of the chart's, by a port the Service names.
    const selects = (labels: Record<string, string> | undefined) =>
      Object.entries(serviceMonitor.spec.selector.matchLabels).every(([k, v]) => labels?.[k] === v);
    const services = [...sm.values()].filter((o) => o.kind === 'Service');
    expect(services.filter((o) => selects(o.metadata?.labels)).map((o) => o.metadata?.name)).toEqual([
      'khrun-server',
    ]);
    const service = sm.get('Service/monitoring/khrun-server') as unknown as {
      spec: { ports: Array<{ name: string }> };
    };
    expect(service.spec.ports.map((p) => p.name)).toContain('http');

    const pm = await render(
      ['monitoring.podMonitor.enabled=true', 'monitoring.podMonitor.interval=15s'],
      api,
    );
    const podMonitor = pm.get('PodMonitor/monitoring/khrun') as unknown as Monitor;
    expect(podMonitor.spec.podMetricsEndpoints).toEqual([{ ...endpoint, interval: '15s' }]);
    const pods = pm.get('Deployment/monitoring/khrun-server') as unknown as {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: { containers: Array<{ ports: Array<{ name: string }> }> };
        };
      };
    };
    expect(pods.spec.template.metadata.labels).toMatchObject(podMonitor.spec.selector.matchLabels);
    expect(pods.spec.template.spec.containers[0]?.ports.map((p) => p.name)).toContain('http');

    const rule = (
      await render(
        ['monitoring.rules.enabled=true', 'monitoring.rules.labels.release=kps', 'monitoring.job=khrun-prod'],
        api,
      )
    ).get('PrometheusRule/monitoring/khrun') as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    };
    expect(rule.metadata.labels).toMatchObject({ release: 'kps' });
    const alerts = rule.spec.groups.flatMap((g) => g.rules);
    for (const { alert, expr } of alerts) expect(expr, alert).toContain('{job="khrun-prod"}');

    const dashboards = await render(
      [
        'monitoring.dashboard.enabled=true',
        'monitoring.dashboard.namespace=grafana',
        'monitoring.dashboard.annotations.grafana_folder=khrun',
      ],
      api,
    );
    const dashboard = dashboards.get('ConfigMap/grafana/khrun-dashboard') as unknown as {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      data: Record<string, string>;
    };
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(dashboard.metadata.annotations).toEqual({ grafana_folder: 'khrun' });
    expect(JSON.parse(dashboard.data['khrun.json']!)).toEqual(
      JSON.parse(await readFile(join(chart, 'dashboards/khrun.json'), 'utf8')),
    );
  });
});

describe('the chart, notifications', () => {
  it('mounts a notification Secret of yours into the runner PodTemplate, the tick and the server, as the runners read it', async () => {
    const render = async (set: string[]) =>
      byKey(await helmTemplate(helmBin, repoRoot, { namespace: 'khrun', set }));
    type Pod = {
      volumes?: unknown[];
      containers: Array<{ env?: Array<{ name: string; value?: string }>; volumeMounts?: unknown[] }>;
    };
    const pods = (o: Map<string, KubernetesObject>) => {
      const get = <T>(k: string) => o.get(k) as unknown as T;
      type Spec = { template: { spec: Pod } };
      return {
        runner: get<Spec>('PodTemplate/khrun/khrun-runner').template.spec,
        tick: get<{ spec: { jobTemplate: { spec: Spec } } }>('CronJob/khrun/khrun-tick').spec.jobTemplate.spec
          .template.spec,
        server: get<{ spec: Spec }>('Deployment/khrun/khrun-server').spec.template.spec,
      };
    };
    const set = [
      'server.enabled=true',
      'notifications.existingSecret=ops-notify',
      'notifications.key=notify.json',
    ];
    const on = pods(await render(set));
    const volume = {
      name: 'notify-config',
      secret: { secretName: 'ops-notify', items: [{ key: 'notify.json', path: 'notify.json' }] },
    };
    const mount = { name: 'notify-config', mountPath: '/etc/khrun/notify', readOnly: true };
    for (const [what, pod] of Object.entries(on)) {
      const env = new Map((pod.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
      expect(env.get('KHRUN_NOTIFY_CONFIG_FILE'), what).toBe('/etc/khrun/notify/notify.json');
      expect(pod.volumes, what).toContainEqual(volume);
      expect(pod.containers[0]?.volumeMounts, what).toContainEqual(mount);
    }
    // As a runner reads it: the mounted key, named by the variable.
    const dir = await mkdtemp(join(tmpdir(), 'khrun-helm-notify-'));
    try {
      await writeFile(
        join(dir, 'notify.json'),
        JSON.stringify({ channels: { hook: { type: 'webhook', url: 'https://x.example/h' } } }),
      );
      const config = notifyConfig({
        flags: {},
        env: { KHRUN_NOTIFY_CONFIG_FILE: join(dir, 'notify.json') },
        flagLabel: NO_FLAGS,
      });
      expect([...(config?.channels.keys() ?? [])]).toEqual(['hook']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // Without it: nothing of it anywhere.
    const off = pods(await render(['server.enabled=true', 'server.reportKey.existingSecret=k']));
    for (const [what, pod] of Object.entries(off)) {
      expect(JSON.stringify(pod), what).not.toContain('notify');
    }
    await expect(helm(['lint', chart, '--set', 'notifications.key=../etc/passwd'])).rejects.toThrow(
      /notifications\/key/,
    );
  });
});

/** The chart's crds/ as `helm template --include-crds` renders them (without the templates). */
async function crdsOfChart(): Promise<string> {
  // Four CRDs (khchecks, khjobs, khstates, v3's healthchecks) render to more than exec's default 1 MiB.
  const { stdout } = await run(
    helmBin,
    ['template', 'khrun', chart, '--include-crds', '-n', DEPLOY_NAMESPACE],
    { maxBuffer: 32 * 1024 * 1024 },
  );
  return objectsOf(stdout)
    .filter((o) => o.kind === 'CustomResourceDefinition')
    .map((o) => dump(o))
    .join('\n---\n');
}

describe('helm install on the local cluster', () => {
  const release = 'khrun';
  let ns: string;
  beforeAll(() => {
    ns = uniqueName('helm');
  });
  afterAll(async () => {
    await helm(['uninstall', release, '-n', ns, '--ignore-not-found']).catch(() => undefined);
    await dropNamespace(kc, ns);
  });

  it('installs with the report server, keeps its key through an upgrade, records a check through the tick → Job → runner path, and uninstalls cleanly', async () => {
    const values = [
      '--set',
      `namespaces={${ns}}`,
      // The suite's admission policies (infra/deploy) stay as they are: an uninstall would delete them, and
      // the API server then stops watching their PodTemplate parameter until it restarts
      // (kubernetes/kubernetes#130887), which admission-policy.test.ts would see.
      '--set',
      'admissionPolicy.enabled=false',
      '--set',
      'tick.extraEnv[0].name=KHRUN_FIRST_RUN_JITTER,tick.extraEnv[0].value=0s',
      // The server with the chart's own key Secret. The runners keep hosting their runs' endpoints
      // (runner.reportToServer would need the Service's DNS name, which the local cluster does not serve).
      '--set',
      'server.enabled=true,server.replicas=1',
      '--wait',
      '--timeout',
      '2m',
    ];
    // --take-ownership: the suite may have applied infra/deploy before, whose cluster-wide objects
    // (ClusterRoles, bindings) have the chart's names; a user moving from the kustomization does the same.
    const installed = await helm([
      'install',
      release,
      chart,
      '--namespace',
      ns,
      '--create-namespace',
      '--take-ownership',
      ...values,
    ]);
    expect(installed).toMatch(/STATUS: deployed/);
    expect(await helm(['list', '-n', ns, '-q'])).toBe(`${release}\n`);

    // The chart made the report key Secret (a key the server's validation takes), the server started with
    // it (it would not start without a key or the unsigned opt-in) and holds exactly that key.
    const core = kc.makeApiClient(CoreV1Api);
    const key = await reportKeyOfSecret(kc, ns, 'khrun-report-key');
    expect(reportKey({ flags: {}, env: { KHRUN_REPORT_KEY: key }, flagLabel: NO_FLAGS })).toBeDefined();
    const serverPod = async () =>
      waitFor<V1Pod, V1Pod>(kc, {
        path: `/api/v1/namespaces/${ns}/pods`,
        labelSelector: 'app.kubernetes.io/component=server',
        decide: (items) => {
          const running = [...items.values()].filter(
            (p) => p.status?.phase === 'Running' && p.status.podIP && !p.metadata?.deletionTimestamp,
          );
          return running.length === 1 ? running[0] : undefined;
        },
        timeoutMs: 60_000,
        description: 'one running khrun serve pod',
      });
    const probeServer = async () => {
      const base = `http://${(await serverPod()).status?.podIP}:8080`;
      expect((await waitForHttp(`${base}/healthz`)).status).toBe(200);
      const answers = await reportKeyAnswers(base, key, ns);
      expect(answers.unsigned.text).toMatch(/takes reports only at the signed URL/);
      expect(answers.otherKey.text).toMatch(/the token in the reporting URL is not valid/);
      expect(answers.ownKey.text).toMatch(/has no khstate: no run is active/);
    };
    await probeServer();

    // `helm test`: the test pod (the khrun image) finds the runner PodTemplate, the tick CronJob and the
    // server answering /healthz behind its Service (the API server's service proxy).
    const tested = await helm(['test', release, '-n', ns, '--logs', '--timeout', '2m']);
    expect(tested).toMatch(/TEST SUITE:\s+khrun-test[\s\S]*Phase:\s+Succeeded/);
    expect(tested).toContain('ok: the runner PodTemplate khrun-runner exists');
    expect(tested).toContain('ok: the tick CronJob khrun-tick exists');
    expect(tested).toContain('ok: the server answers /healthz behind its Service khrun-server');
    expect(tested).not.toContain('FAILED');

    // An upgrade keeps the key (lookup finds the Secret and renders its key again), so the server and
    // runners keep sharing it.
    const upgraded = await helm(['upgrade', release, chart, '--namespace', ns, ...values]);
    expect(upgraded).toMatch(/has been upgraded/);
    expect(await reportKeyOfSecret(kc, ns, 'khrun-report-key')).toBe(key);
    await probeServer();

    // namespaces={ns}: the runner may manage pods in ns and nowhere else (a RoleBinding, no cluster-wide one).
    const runnerKc = await serviceAccountKubeConfig(kc, ns, 'khrun-runner');
    const may = async (namespace: string, verb: string, subresource?: string) =>
      (
        await runnerKc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb, resource: 'pods', subresource, namespace } } },
        })
      ).status?.allowed === true;
    for (const verb of ['create', 'delete']) {
      expect(await may(ns, verb), `${verb} pods in ${ns}`).toBe(true);
      expect(await may('default', verb), `${verb} pods in default`).toBe(false);
    }
    // It removes its checker pods by delete (policy 3 holds it to them), never by eviction (no policy could).
    expect(await may(ns, 'create', 'eviction'), `create eviction in ${ns}`).toBe(false);

    // A check whose image's entrypoint is node (mapped by the global setup): args only, as a user writes it.
    await createCheck(kc, ns, 'helm-check', {
      containers: [
        {
          name: 'check',
          image: 'node:20-alpine',
          args: [
            '-e',
            "fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log(r.status));",
          ],
        },
      ],
    });
    const tickJob = uniqueName('tick-now');
    await kubectl(['create', 'job', '-n', ns, '--from=cronjob/khrun-tick', tickJob]);

    const state = await waitFor<KhState, KhState>(kc, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`,
      decide: (items) => {
        const s = items.get(`${ns}/helm-check`);
        return s && readLastOutcome(s) ? s : undefined;
      },
      timeoutMs: 150_000,
      description: 'the outcome of helm-check',
    });
    expect(readLastOutcome(state)?.kind).toBe('Succeeded');
    const claim = readDispatchClaim(state);
    expect(claim?.ref).toMatch(/^khrun-run-helm-check-[0-9a-z]+$/);
    const batch = kc.makeApiClient(BatchV1Api);
    const job = await batch.readNamespacedJob({ name: claim!.ref, namespace: ns });
    expect(job.metadata?.labels?.['khrun.dev/check']).toBe('helm-check');
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${claim?.ref}` });
    const runner = pods.items[0]!;
    expect(runner.spec?.serviceAccountName).toBe('khrun-runner');
    expect(runner.spec?.containers[0]).toMatchObject({
      image: SHIPPED_IMAGE,
      args: ['run', '--output', 'json'],
    });
    expect(state.spec.AuthoritativePod).toBe(runner.metadata?.name);
    await waitFor<V1Job, true>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      fieldSelector: `metadata.name=${claim!.ref}`,
      decide: (items) => (items.get(`${ns}/${claim!.ref}`)?.status?.succeeded === 1 ? true : undefined),
      timeoutMs: 60_000,
      description: 'the runner Job to succeed',
    });

    const uninstalled = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '2m']);
    expect(uninstalled).toMatch(/release "khrun" uninstalled/);
    expect(await helm(['list', '-n', ns, '-q'])).toBe('');
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const gone = async (read: () => Promise<unknown>) =>
      read().then(
        () => false,
        (error: unknown) => isNotFound(error),
      );
    for (const name of ['khrun-runner', 'khrun-tick', 'khrun-server']) {
      expect(await gone(() => rbac.readClusterRole({ name })), `ClusterRole ${name}`).toBe(true);
      expect(await gone(() => core.readNamespacedServiceAccount({ name, namespace: ns })), name).toBe(true);
    }
    expect(await gone(() => rbac.readClusterRoleBinding({ name: 'khrun-server' }))).toBe(true);
    expect(await gone(() => core.readNamespacedService({ name: 'khrun-server', namespace: ns }))).toBe(true);
    // The report key stays (helm.sh/resource-policy: keep): a reinstall reuses the key the runners and
    // servers (and anything given a copy) share. Deleting the namespace removes it.
    expect(await reportKeyOfSecret(kc, ns, 'khrun-report-key')).toBe(key);
    // The runner was bound in its namespace of checks only (namespaces set), the tick cluster-wide.
    expect(await gone(() => rbac.readNamespacedRoleBinding({ name: 'khrun-runner', namespace: ns }))).toBe(
      true,
    );
    expect(await gone(() => rbac.readClusterRoleBinding({ name: 'khrun-tick' }))).toBe(true);
    expect(await gone(() => core.readNamespacedPodTemplate({ name: 'khrun-runner', namespace: ns }))).toBe(
      true,
    );
    expect(await gone(() => batch.readNamespacedCronJob({ name: 'khrun-tick', namespace: ns }))).toBe(true);
    expect(await gone(() => rbac.readNamespacedRole({ name: 'khrun-tick', namespace: ns }))).toBe(true);
    // The test's ServiceAccount and Role are the release's; its pod is a hook, left for its log (README).
    expect(await gone(() => core.readNamespacedServiceAccount({ name: 'khrun-test', namespace: ns }))).toBe(
      true,
    );
    expect(await gone(() => rbac.readNamespacedRole({ name: 'khrun-test', namespace: ns }))).toBe(true);
    expect(await gone(() => core.readNamespacedPod({ name: 'khrun-test', namespace: ns }))).toBe(false);
    // Helm never deletes CRDs (nor, with them, every khcheck and khstate of the cluster).
    const crds = kc.makeApiClient(ApiextensionsV1Api);
    expect(await gone(() => crds.readCustomResourceDefinition({ name: `khchecks.${KH_GROUP}` }))).toBe(false);
  }, 420_000);
});

import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startBareControlPlane } from './helpers/second-control-plane.ts';

// What the chart's README says about reinstalling khrun (kubernetes/kubernetes#130887), tried on a real
// kube-apiserver of the pinned version, a bare one of this test's own (the suite's always has bindings
// naming PodTemplate, from infra/deploy). khrun's template policies take the PodTemplate khrun-runner as
// their parameter; here a policy of the same shape takes the PodTemplate `param` and refuses the ConfigMap
// its label `deny` names, so which ConfigMap is refused shows which version of the parameter the API
// server sees.
//
// 1. The binding deleted (as by `helm uninstall`) and created again (`helm install`): the API server keeps
//    the parameter as it was and sees no change to it any more, until it restarts.
// 2. With a placeholder binding naming PodTemplate kept meanwhile (the README's keeper), the same deletion
//    and creation leave it seeing every change.

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
// The README's keeper, as written there.
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

import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { type ProcessKubelet, startProcessKubelet } from '@khrun/devkit/local/kubelet/kubelet.ts';
import { podNetworkForSlot, podNetworkNames } from '@khrun/devkit/local/pod-network.ts';
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Container,
  type V1Job,
  type V1Lease,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  adminKubeConfig,
  dropNamespace,
  freshNamespace,
  uniqueName,
  waitFor,
  waitForPhase,
  waitForPod,
} from './helpers/cluster.ts';
import { pidOf, podOf, processAlive, shContainer } from './helpers/pods.ts';
import { startBareControlPlane } from './helpers/second-control-plane.ts';

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const hostIp = inject('hostIp');
const apiServerPort = inject('apiServerPort');
const network = podNetworkForSlot(inject('podNetworkSlot'));
const NODE = 'khrun-node';
const clientNodeEntry = resolve(
  import.meta.dirname,
  '../../node_modules/@kubernetes/client-node/dist/index.js',
);

const namespaces: string[] = [];
async function ns(): Promise<string> {
  const name = await freshNamespace(kc, 'kubelet');
  namespaces.push(name);
  return name;
}
afterAll(async () => {
  for (const name of namespaces) await dropNamespace(kc, name);
});

const logOf = (
  namespace: string,
  name: string,
  container?: string,
  extra: { tailLines?: number; previous?: boolean } = {},
) => core.readNamespacedPodLog({ name, namespace, container, ...extra });

const waitingReason = (pod: V1Pod | undefined, container = 'main') =>
  pod?.status?.containerStatuses?.find((c) => c.name === container)?.state?.waiting;

/** Parses `env` output (one NAME=value per line; values here have no newlines). */
function parseEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

describe('process kubelet on the shared cluster', () => {
  it('registers a Ready node with capacity, its host address only, and a renewed lease', async () => {
    const node = await core.readNode({ name: NODE });
    expect(node.status?.addresses).toEqual([{ type: 'InternalIP', address: hostIp }]);
    expect(Number(node.status?.allocatable?.cpu)).toBeGreaterThan(0);
    expect(node.status?.allocatable?.memory).toMatch(/^\d+Ki$/);
    expect(node.status?.allocatable?.pods).toBe('110');
    expect(node.status?.nodeInfo?.kubeletVersion).toBe(inject('kubernetesVersion'));
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBeGreaterThan(0);
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const taints = (node.spec?.taints ?? []).map((t) => t.key);
    expect(taints).not.toContain('node.kubernetes.io/not-ready');
    expect(taints).not.toContain('node.kubernetes.io/unreachable');
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: NODE, namespace: 'kube-node-lease' });
    expect(lease.spec?.holderIdentity).toBe(NODE);
    // Renewed, not merely present: a later renewTime is seen. The kubelet renews every 10 s (a quarter of
    // the 40 s duration); the deadline is the node controller's grace period, as a loaded node (the whole
    // suite at once on 2 cores) may be late by seconds without being unhealthy.
    const first = new Date(lease.spec!.renewTime!).getTime();
    const renewed = await waitFor<V1Lease, number>(kc, {
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
      fieldSelector: `metadata.name=${NODE}`,
      decide: (items) => {
        const t = items.get(`kube-node-lease/${NODE}`)?.spec?.renewTime;
        return t && new Date(t).getTime() > first ? new Date(t).getTime() : undefined;
      },
      timeoutMs: 50_000,
      description: `a renewal of the node lease after ${lease.spec!.renewTime}`,
    });
    expect(renewed).toBeGreaterThan(first);
  }, 70_000);

  it('runs a pod bound by the real scheduler to Succeeded, and measures how fast', async () => {
    const namespace = await ns();
    const created = Date.now();
    await core.createNamespacedPod({ namespace, body: podOf('fast', [shContainer('main', 'true')]) });
    const done = await waitForPhase(kc, namespace, 'fast', 'Succeeded');
    const succeededMs = Date.now() - created;
    expect(done.spec?.nodeName).toBe(NODE);
    expect(done.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
    const status = done.status!.containerStatuses![0]!;
    expect(status.state?.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(status.containerID).toMatch(/^proc:\/\/\d+$/);
    expect(done.status?.podIP?.split('.').slice(0, 2)).toEqual(network.hostIp.split('.').slice(0, 2));
    expect(done.status?.hostIP).toBe(hostIp);

    // More samples: create → Succeeded for `true`, and create → Running for a container that keeps running.
    const succeeded = [succeededMs];
    const running: number[] = [];
    for (let i = 0; i < 4; i++) {
      const t0 = Date.now();
      await core.createNamespacedPod({ namespace, body: podOf(`fast-${i}`, [shContainer('main', 'true')]) });
      await waitForPhase(kc, namespace, `fast-${i}`, 'Succeeded');
      succeeded.push(Date.now() - t0);
      const t1 = Date.now();
      await core.createNamespacedPod({
        namespace,
        body: podOf(`runs-${i}`, [shContainer('main', 'exec sleep 3600')]),
      });
      await waitForPhase(kc, namespace, `runs-${i}`, 'Running');
      running.push(Date.now() - t1);
      await core.deleteNamespacedPod({ name: `runs-${i}`, namespace, gracePeriodSeconds: 0 });
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `[timing] create → Running: median ${median(running)} ms of [${running.join(', ')}]; ` +
        `create → Succeeded (command true): median ${median(succeeded)} ms of [${succeeded.join(', ')}]`,
    );
    expect(median(running)).toBeLessThan(5_000);
    expect(median(succeeded)).toBeLessThan(5_000);
  });

  it('reports a failing container as Failed with its exit code and the log tail as termination message', async () => {
    const namespace = await ns();
    const container = shContainer('main', 'echo line one; echo "something broke" >&2; exit 3', {
      terminationMessagePolicy: 'FallbackToLogsOnError',
    });
    await core.createNamespacedPod({ namespace, body: podOf('fails', [container]) });
    const pod = await waitForPhase(kc, namespace, 'fails', 'Failed');
    const terminated = pod.status!.containerStatuses![0]!.state!.terminated!;
    expect(terminated.exitCode).toBe(3);
    expect(terminated.reason).toBe('Error');
    expect(terminated.message).toBe('line one\nsomething broke\n');
    expect(terminated.startedAt).toBeTruthy();
    expect(terminated.finishedAt).toBeTruthy();
  });

  it('reads the termination message the process wrote at terminationMessagePath', async () => {
    const namespace = await ns();
    const container = shContainer('main', 'printf "all done" > /dev/termination-log; echo noise');
    await core.createNamespacedPod({ namespace, body: podOf('message', [container]) });
    const pod = await waitForPhase(kc, namespace, 'message', 'Succeeded');
    expect(pod.status!.containerStatuses![0]!.state!.terminated!.message).toBe('all done');
  });

  it('ends the process of a deleted pod: SIGTERM, then SIGKILL after the grace period, then the pod is gone', async () => {
    const namespace = await ns();
    // "stubborn" ignores SIGTERM, so only the SIGKILL after its 2 s grace period ends it. Its node child
    // (which Node resets to die on SIGTERM) connects to the test once the trap is in place.
    const control = createTcpServer();
    control.listen(0, hostIp);
    await once(control, 'listening');
    const { port } = control.address() as { port: number };
    const trapped = once(control, 'connection');
    const child = `${process.execPath} -e "require('net').connect(${port}, '${hostIp}'); setInterval(() => {}, 60000)"`;
    const stubborn = podOf('stubborn', [
      shContainer('main', `trap "" TERM; ${child} & while :; do sleep 1; done`),
    ]);
    const polite = podOf('polite', [shContainer('main', 'exec sleep 3600')]);
    await core.createNamespacedPod({ namespace, body: stubborn });
    await core.createNamespacedPod({ namespace, body: polite });
    const stubbornPid = pidOf(await waitForPhase(kc, namespace, 'stubborn', 'Running'), 'main');
    const politePid = pidOf(await waitForPhase(kc, namespace, 'polite', 'Running'), 'main');
    await trapped;
    control.close();
    expect(await processAlive(stubbornPid)).toBe(true);
    expect(await processAlive(politePid)).toBe(true);

    const deletedAt = Date.now();
    await core.deleteNamespacedPod({ name: 'stubborn', namespace, gracePeriodSeconds: 2 });
    await core.deleteNamespacedPod({ name: 'polite', namespace, gracePeriodSeconds: 30 });
    await waitForPod(kc, namespace, 'polite', (p) => (p ? undefined : true), 'deleted');
    const politeMs = Date.now() - deletedAt;
    await waitForPod(kc, namespace, 'stubborn', (p) => (p ? undefined : true), 'deleted');
    const stubbornMs = Date.now() - deletedAt;
    expect(await processAlive(politePid)).toBe(false);
    expect(await processAlive(stubbornPid)).toBe(false);
    expect(politeMs).toBeLessThan(10_000); // far below its 30 s grace period: SIGTERM ended it
    expect(stubbornMs).toBeGreaterThanOrEqual(2_000);
  });

  it('kills the processes of a force-deleted pod at once', async () => {
    const namespace = await ns();
    // The pod holds a connection to the test; its closing is how the test sees the process die.
    const control = createTcpServer();
    control.listen(0, hostIp);
    await once(control, 'listening');
    const { port } = control.address() as { port: number };
    const connected = once(control, 'connection') as Promise<[Socket]>;
    const script = `require('net').connect(${port}, '${hostIp}'); setInterval(() => {}, 60000);`;
    try {
      const container = { name: 'main', image: 'node:20', command: [process.execPath, '-e', script] };
      await core.createNamespacedPod({
        namespace,
        body: podOf('forced', [container], { terminationGracePeriodSeconds: 30 }),
      });
      const pid = pidOf(await waitForPhase(kc, namespace, 'forced', 'Running'), 'main');
      const [socket] = await connected;
      const closed = once(socket, 'close');
      const deletedAt = Date.now();
      await core.deleteNamespacedPod({ name: 'forced', namespace, gracePeriodSeconds: 0 });
      await closed;
      expect(Date.now() - deletedAt).toBeLessThan(10_000);
      expect(await processAlive(pid)).toBe(false);
    } finally {
      control.close();
    }
  });

  it('leaves pods that do not fit Pending with the scheduler’s Unschedulable condition', async () => {
    const namespace = await ns();
    const huge = podOf('huge', [shContainer('main', 'true', { resources: { requests: { cpu: '1000' } } })]);
    const elsewhere = podOf('elsewhere', [shContainer('main', 'true')], {
      nodeSelector: { 'khrun.io/no-such': 'node' },
    });
    await core.createNamespacedPod({ namespace, body: huge });
    await core.createNamespacedPod({ namespace, body: elsewhere });
    for (const name of ['huge', 'elsewhere']) {
      const condition = await waitForPod(
        kc,
        namespace,
        name,
        (p) => p?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False'),
        'PodScheduled=False',
      );
      expect(condition.reason).toBe('Unschedulable');
      const pod = await core.readNamespacedPod({ name, namespace });
      expect(pod.status?.phase).toBe('Pending');
      expect(pod.spec?.nodeName).toBeUndefined();
    }
  });

  it('shows ErrImagePull then ImagePullBackOff for an unpullable image, InvalidImageName and CreateContainerError', async () => {
    const namespace = await ns();
    await core.createNamespacedPod({
      namespace,
      body: podOf('unpullable', [shContainer('main', 'true', { image: 'khrun.invalid/unpullable/app:1' })]),
    });
    await core.createNamespacedPod({
      namespace,
      body: podOf('invalid', [shContainer('main', 'true', { image: 'Not A/Valid:image' })]),
    });
    await core.createNamespacedPod({
      namespace,
      body: podOf('nocommand', [{ name: 'main', image: 'busybox:1.36' }]),
    });
    const seen: string[] = [];
    await waitForPod(
      kc,
      namespace,
      'unpullable',
      (p) => {
        const reason = waitingReason(p)?.reason;
        const pulling = reason === 'ErrImagePull' || reason === 'ImagePullBackOff';
        if (pulling && seen.at(-1) !== reason) seen.push(reason);
        return seen.includes('ImagePullBackOff') ? true : undefined;
      },
      'ImagePullBackOff',
    );
    expect(seen.slice(0, 2)).toEqual(['ErrImagePull', 'ImagePullBackOff']);
    const invalid = await waitForPod(kc, namespace, 'invalid', (p) => waitingReason(p), 'a waiting reason');
    expect(invalid.reason).toBe('InvalidImageName');
    const noCommand = await waitForPod(
      kc,
      namespace,
      'nocommand',
      (p) => (waitingReason(p)?.message ? waitingReason(p) : undefined),
      'a waiting message',
    );
    expect(noCommand.reason).toBe('CreateContainerError');
    expect((await core.readNamespacedPod({ name: 'unpullable', namespace })).status?.phase).toBe('Pending');
  });

  it('resolves env from values, fieldRef, secretKeyRef, configMapKeyRef and envFrom, as the kubelet does', async () => {
    const namespace = await ns();
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 's' }, stringData: { password: 's3cr3t' } },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'c' }, data: { color: 'blue', size: 'L' } },
    });
    const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });
    const pod = podOf('env', [
      shContainer('main', 'env', {
        envFrom: [{ configMapRef: { name: 'c' }, prefix: 'CM_' }],
        env: [
          { name: 'FIRST', value: 'one' },
          { name: 'SECOND', value: '$(FIRST)-two' },
          { name: 'ESCAPED', value: '$$(FIRST)' },
          { name: 'UNKNOWN', value: '$(NOPE)' },
          { name: 'POD_NAME', ...field('metadata.name') },
          { name: 'POD_NAMESPACE', ...field('metadata.namespace') },
          { name: 'POD_UID', ...field('metadata.uid') },
          { name: 'APP', ...field("metadata.labels['app']") },
          { name: 'NOTE', ...field("metadata.annotations['note']") },
          { name: 'NODE', ...field('spec.nodeName') },
          { name: 'SA', ...field('spec.serviceAccountName') },
          { name: 'POD_IP', ...field('status.podIP') },
          { name: 'HOST_IP', ...field('status.hostIP') },
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 's', key: 'password' } } },
          { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'c', key: 'color' } } },
          { name: 'MAYBE', valueFrom: { secretKeyRef: { name: 's', key: 'absent', optional: true } } },
        ],
      }),
    ]);
    pod.metadata = { name: 'env', labels: { app: 'envtest' }, annotations: { note: 'hi there' } };
    await core.createNamespacedPod({ namespace, body: pod });
    const done = await waitForPhase(kc, namespace, 'env', 'Succeeded');
    const env = parseEnv(await logOf(namespace, 'env'));
    expect(env).toMatchObject({
      FIRST: 'one',
      SECOND: 'one-two',
      ESCAPED: '$(FIRST)',
      UNKNOWN: '$(NOPE)',
      POD_NAME: 'env',
      POD_NAMESPACE: namespace,
      POD_UID: done.metadata!.uid!,
      APP: 'envtest',
      NOTE: 'hi there',
      NODE: NODE,
      SA: 'default',
      POD_IP: done.status!.podIP!,
      HOST_IP: hostIp,
      PASSWORD: 's3cr3t',
      COLOR: 'blue',
      CM_color: 'blue',
      CM_size: 'L',
      KUBERNETES_SERVICE_HOST: hostIp,
      KUBERNETES_SERVICE_PORT: String(apiServerPort),
      KUBERNETES_SERVICE_PORT_HTTPS: String(apiServerPort),
      HOSTNAME: 'env',
      HOME: '/root',
    });
    expect(env.PATH).toContain('/usr/bin');
    expect(env).not.toHaveProperty('MAYBE');
  });

  it('waits with CreateContainerConfigError for a missing secret key, and starts once the key exists', async () => {
    const namespace = await ns();
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'later' }, stringData: { other: 'x' } },
    });
    const pod = podOf('needs-key', [
      shContainer('main', 'echo "token=$TOKEN"', {
        env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'later', key: 'token' } } }],
      }),
    ]);
    await core.createNamespacedPod({ namespace, body: pod });
    const waiting = await waitForPod(
      kc,
      namespace,
      'needs-key',
      (p) => (waitingReason(p)?.message ? waitingReason(p) : undefined),
      'a message',
    );
    expect(waiting.reason).toBe('CreateContainerConfigError');
    expect(waiting.message).toBe(`couldn't find key token in Secret ${namespace}/later`);
    await core.replaceNamespacedSecret({
      name: 'later',
      namespace,
      body: { metadata: { name: 'later' }, stringData: { other: 'x', token: 'abc' } },
    });
    await waitForPhase(kc, namespace, 'needs-key', 'Succeeded');
    expect(await logOf(namespace, 'needs-key')).toBe('token=abc\n');
  });

  it('gives each pod its own address: a host server sees connections from the podIPs', async () => {
    const namespace = await ns();
    const seen = new Map<string, string | undefined>();
    const server = createHttpServer((req, res) => {
      seen.set(new URL(req.url ?? '/', 'http://x').searchParams.get('pod') ?? '', req.socket.remoteAddress);
      res.end('pong');
    });
    server.listen(0, hostIp);
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    try {
      const script = `fetch('http://${hostIp}:${port}/?pod=' + process.env.POD_NAME).then((r) => r.text()).then((t) => console.log(t), (e) => { console.error(e); process.exit(1); })`;
      for (const name of ['caller-a', 'caller-b']) {
        const container = {
          name: 'main',
          image: 'node:20',
          command: [process.execPath, '-e', script],
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        };
        await core.createNamespacedPod({ namespace, body: podOf(name, [container]) });
      }
      const a = await waitForPhase(kc, namespace, 'caller-a', 'Succeeded');
      const b = await waitForPhase(kc, namespace, 'caller-b', 'Succeeded');
      expect(await logOf(namespace, 'caller-a')).toBe('pong\n');
      expect(seen.get('caller-a')).toBe(a.status?.podIP);
      expect(seen.get('caller-b')).toBe(b.status?.podIP);
      expect(a.status?.podIP).not.toBe(b.status?.podIP);
    } finally {
      server.close();
    }
  });

  it('runs a hostNetwork pod in the host’s network namespace with the host address as podIP', async () => {
    const namespace = await ns();
    await core.createNamespacedPod({
      namespace,
      body: podOf('on-host', [shContainer('main', 'echo on host')], { hostNetwork: true }),
    });
    const pod = await waitForPhase(kc, namespace, 'on-host', 'Succeeded');
    expect(pod.status?.podIP).toBe(hostIp);
    expect(await logOf(namespace, 'on-host')).toBe('on host\n');
  });

  it('follows a running container’s log until it exits', async () => {
    const namespace = await ns();
    await core.createNamespacedPod({
      namespace,
      body: podOf('chatty', [shContainer('main', 'echo first; sleep 2; echo second')]),
    });
    await waitForPhase(kc, namespace, 'chatty', 'Running');
    const followed = await core.readNamespacedPodLog({ name: 'chatty', namespace, follow: true });
    expect(followed).toBe('first\nsecond\n');
  });

  it('runs a Job’s pod to completion so the real Job controller marks the Job Complete', async () => {
    const namespace = await ns();
    const job: V1Job = {
      metadata: { name: 'once' },
      spec: {
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [shContainer('main', 'echo job ran')] } },
      },
    };
    await kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace, body: job });
    const outcome = await waitFor<V1Job, string>(kc, {
      path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
      fieldSelector: 'metadata.name=once',
      decide: (items) =>
        items
          .get(`${namespace}/once`)
          ?.status?.conditions?.find(
            (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
          )?.type,
      timeoutMs: 60_000,
      description: 'Job once to be Complete or Failed',
    });
    expect(outcome).toBe('Complete');
    const pods = await core.listNamespacedPod({ namespace, labelSelector: 'job-name=once' });
    expect(pods.items.map((p) => p.status?.phase)).toEqual(['Succeeded']);
    expect(await logOf(namespace, pods.items[0]!.metadata!.name!)).toBe('job ran\n');
  });

  it('mounts the ServiceAccount token so in-cluster client-node authenticates as the pod’s ServiceAccount', async () => {
    const namespace = await ns();
    await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'default-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: 'default', namespace }],
      },
    });
    const script = `
      import { readFileSync } from 'node:fs';
      const k8s = await import(${JSON.stringify(clientNodeEntry)});
      const dir = '/var/run/secrets/kubernetes.io/serviceaccount';
      const kc = new k8s.KubeConfig();
      kc.loadFromCluster();
      const me = await kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
      const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: readFileSync(dir + '/namespace', 'utf8') });
      let secrets;
      try { await kc.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({ namespace: readFileSync(dir + '/namespace', 'utf8') }); secrets = 'allowed'; }
      catch (e) { secrets = e.code; }
      console.log(JSON.stringify({
        user: me.status.userInfo.username,
        pods: pods.items.map((p) => p.metadata.name),
        secrets,
        tokenEndsWithNewline: readFileSync(dir + '/token', 'utf8').endsWith('\\n'),
        caLooksLikePem: readFileSync(dir + '/ca.crt', 'utf8').includes('BEGIN CERTIFICATE'),
      }));`;
    const container = {
      name: 'main',
      image: 'node:20',
      command: [process.execPath, '--input-type=module', '-e', script],
    };
    await core.createNamespacedPod({ namespace, body: podOf('in-cluster', [container]) });
    await waitForPhase(kc, namespace, 'in-cluster', 'Succeeded');
    const result = JSON.parse(await logOf(namespace, 'in-cluster'));
    expect(result).toEqual({
      user: `system:serviceaccount:${namespace}:default`,
      pods: ['in-cluster'],
      secrets: 403,
      tokenEndsWithNewline: false,
      caLooksLikePem: true,
    });
  });

  it('runs init containers in order before the containers, sharing an emptyDir', async () => {
    const namespace = await ns();
    const work = { name: 'work', mountPath: '/work' };
    const pod = podOf(
      'inits',
      [shContainer('main', 'cat /work/order; echo main', { volumeMounts: [work] })],
      {
        volumes: [{ name: 'work', emptyDir: {} }],
        initContainers: [
          shContainer('first', 'echo first >> /work/order', { volumeMounts: [work] }),
          shContainer('second', 'echo second >> /work/order', { volumeMounts: [work] }),
        ],
      },
    );
    await core.createNamespacedPod({ namespace, body: pod });
    const done = await waitForPhase(kc, namespace, 'inits', 'Succeeded');
    expect(await logOf(namespace, 'inits', 'main')).toBe('first\nsecond\nmain\n');
    expect(done.status?.initContainerStatuses?.map((s) => [s.name, s.state?.terminated?.reason])).toEqual([
      ['first', 'Completed'],
      ['second', 'Completed'],
    ]);
    const finished = (name: string) =>
      new Date(
        done.status!.initContainerStatuses!.find((s) => s.name === name)!.state!.terminated!.finishedAt!,
      );
    const mainStarted = new Date(done.status!.containerStatuses![0]!.state!.terminated!.startedAt!);
    expect(finished('first').getTime()).toBeLessThanOrEqual(finished('second').getTime());
    expect(finished('second').getTime()).toBeLessThanOrEqual(mainStarted.getTime());
  });

  it('mounts configMap, secret and downwardAPI volumes read-only, honouring items', async () => {
    const namespace = await ns();
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'cfg' }, data: { a: 'alpha', b: 'beta' } },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'sec' }, stringData: { key: 'hidden' } },
    });
    const script = [
      'ls /cfg',
      'cat /cfg/only-b; echo',
      'cat /sec/key; echo',
      'cat /info/name; echo',
      'touch /cfg/new 2>/dev/null && echo writable || echo read-only',
    ].join('; ');
    const pod = podOf(
      'volumes',
      [
        shContainer('main', script, {
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'sec', mountPath: '/sec' },
            { name: 'info', mountPath: '/info' },
          ],
        }),
      ],
      {
        volumes: [
          { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'b', path: 'only-b' }] } },
          { name: 'sec', secret: { secretName: 'sec' } },
          {
            name: 'info',
            downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] },
          },
        ],
      },
    );
    await core.createNamespacedPod({ namespace, body: pod });
    await waitForPhase(kc, namespace, 'volumes', 'Succeeded');
    expect(await logOf(namespace, 'volumes')).toBe('only-b\nbeta\nhidden\nvolumes\nread-only\n');
  });

  it('restarts under OnFailure with a restart count, and serves the previous run’s log and tailLines', async () => {
    const namespace = await ns();
    const work = { name: 'work', mountPath: '/work' };
    const script =
      'if [ -e /work/ran ]; then echo second run; echo last line; exit 0; fi; touch /work/ran; echo first run; exit 4';
    const pod = podOf('retry', [shContainer('main', script, { volumeMounts: [work] })], {
      restartPolicy: 'OnFailure',
      volumes: [{ name: 'work', emptyDir: {} }],
    });
    await core.createNamespacedPod({ namespace, body: pod });
    const done = await waitForPhase(kc, namespace, 'retry', 'Succeeded');
    const status = done.status!.containerStatuses![0]!;
    expect(status.restartCount).toBe(1);
    expect(status.lastState?.terminated?.exitCode).toBe(4);
    expect(await logOf(namespace, 'retry')).toBe('second run\nlast line\n');
    expect(await logOf(namespace, 'retry', 'main', { tailLines: 1 })).toBe('last line\n');
    expect(await logOf(namespace, 'retry', 'main', { previous: true })).toBe('first run\n');
  });
});

/** Pids of live processes whose parent is this test process. */
function childPids(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = (() => {
      try {
        return readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        return '';
      }
    })();
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[1]) === process.pid) out.push(Number(entry));
  }
  return out;
}

describe('process kubelet with a control plane of its own', () => {
  let bare: Awaited<ReturnType<typeof startBareControlPlane>>;
  let kubelet: ProcessKubelet;
  let kc2: KubeConfig;
  let core2: CoreV1Api;
  const nodeName = uniqueName('khrun-own');

  const startOwnKubelet = () =>
    startProcessKubelet({
      kubeConfig: kc2,
      nodeName,
      hostIp,
      apiServer: { host: hostIp, port: bare.cp.port },
      stateDir: join(bare.dir, 'kubelet'),
      network,
      podIpRange: {
        first: network.hostIp.replace(/\.0\.1$/, '.250.1'),
        last: network.hostIp.replace(/\.0\.1$/, '.250.254'),
      },
    });

  beforeAll(async () => {
    bare = await startBareControlPlane(hostIp);
    kc2 = bare.cp.adminKubeConfig;
    core2 = kc2.makeApiClient(CoreV1Api);
    // No controller manager here: the ServiceAccount admission plugin needs the default ServiceAccount.
    await core2.createNamespacedServiceAccount({
      namespace: 'default',
      body: { metadata: { name: 'default' } },
    });
    kubelet = await startOwnKubelet();
  });
  afterAll(async () => {
    await kubelet?.stop();
    await bare?.stop();
  });

  /** Bound straight to this kubelet's node (no scheduler here), without a token volume (no token controller). */
  const boundPod = (name: string, containers: V1Container[], extra: Partial<V1PodSpec> = {}) =>
    podOf(name, containers, { nodeName, automountServiceAccountToken: false, ...extra });

  it('keeps running pods through an API server restart and writes their status once it is back', async () => {
    const control = createTcpServer();
    control.listen(0, hostIp);
    await once(control, 'listening');
    const { port } = control.address() as { port: number };
    const connected = once(control, 'connection') as Promise<[Socket]>;
    const script = `const s = require('net').connect(${port}, '${hostIp}'); s.on('data', () => process.exit(0)); s.on('error', () => process.exit(2));`;
    try {
      await core2.createNamespacedPod({
        namespace: 'default',
        body: boundPod('survivor', [
          { name: 'main', image: 'node:20', command: [process.execPath, '-e', script] },
        ]),
      });
      await waitForPhase(kc2, 'default', 'survivor', 'Running');
      const [socket] = await connected;
      const leaseApi = kc2.makeApiClient(CoordinationV1Api);
      const renewedBefore = new Date(
        (await leaseApi.readNamespacedLease({ name: nodeName, namespace: 'kube-node-lease' })).spec!
          .renewTime!,
      );

      await bare.cp.stopApiServer();
      socket.write('exit\n');
      await once(socket, 'close'); // the pod's process has exited while the API server is down
      await bare.cp.startApiServer();

      const pod = await waitForPhase(kc2, 'default', 'survivor', 'Succeeded', 30_000);
      expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
      await waitFor(kc2, {
        path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
        fieldSelector: `metadata.name=${nodeName}`,
        decide: (items) => {
          const lease = items.get(`kube-node-lease/${nodeName}`) as
            | { spec?: { renewTime?: string } }
            | undefined;
          return lease?.spec?.renewTime && new Date(lease.spec.renewTime) > renewedBefore ? true : undefined;
        },
        timeoutMs: 30_000,
        description: 'the node lease to be renewed after the restart',
      });
    } finally {
      control.close();
    }
  });

  it('stop() kills every pod process and removes its namespaces and the mount points it created', async () => {
    const hostDir = `/${uniqueName('khrun-stoptest')}`;
    const scratch = { name: 'scratch', mountPath: `${hostDir}/data` };
    // The node process connects once both sleeps are started: the connection says the pod is all there.
    const control = createTcpServer();
    control.listen(0, network.hostIp);
    await once(control, 'listening');
    const { port } = control.address() as { port: number };
    const connected = once(control, 'connection') as Promise<[Socket]>;
    const node = `${process.execPath} -e "require('net').connect(${port}, '${network.hostIp}'); setInterval(() => {}, 60000)"`;
    const pod = boundPod(
      'lingering',
      [
        shContainer('main', `sleep 3600 & sleep 3600 & exec ${node}`, {
          volumeMounts: [scratch],
          terminationMessagePath: `${hostDir}/data/termination-log`,
        }),
      ],
      { volumes: [{ name: 'scratch', emptyDir: {} }] },
    );
    const before = new Set(childPids());
    await core2.createNamespacedPod({ namespace: 'default', body: pod });
    const running = await waitForPhase(kc2, 'default', 'lingering', 'Running');
    const [socket] = await connected;
    const { netns } = podNetworkNames(network, running.metadata!.uid!);
    const inNetns = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
    expect(inNetns).toContain(pidOf(running, 'main'));
    expect(inNetns.length).toBe(3); // node (exec'd from sh) and the two sleeps
    expect(existsSync(hostDir)).toBe(true);

    const closed = once(socket, 'close');
    await kubelet.stop();

    for (const pid of inNetns) expect(await processAlive(pid), `pid ${pid}`).toBe(false);
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(netns);
    expect(existsSync(hostDir)).toBe(false);
    const controlPlane = new Set(bare.cp.pids());
    expect(childPids().filter((pid) => !before.has(pid) && !controlPlane.has(pid))).toEqual([]);
    await closed;
    control.close();
  });

  it('reports the pod whose process a stopped kubelet lost as ContainerStatusUnknown once a kubelet is back', async () => {
    kubelet = await startOwnKubelet();
    const pod = await waitForPhase(kc2, 'default', 'lingering', 'Failed');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
    });
  });
});

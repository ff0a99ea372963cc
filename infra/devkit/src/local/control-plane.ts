import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { retryWithBackoff } from '../../../../lib/core/backoff.ts';
import type { ClusterBinaries } from './binaries.ts';
import { type StaticUser, writeCredentials } from './credentials.ts';
import { freePort } from './free-port.ts';
import { probeStatus } from './http-probe.ts';
import { kubeConfigFor } from './kubeconfig.ts';
import { type SupervisedProcess, startProcess } from './process.ts';

export interface ControlPlaneOptions {
  binaries: ClusterBinaries;
  /** A fresh directory owned by the caller: data, certificates, logs. */
  dir: string;
  /** The host's address on the pod network: put in the serving certificate and the kubernetes Service. */
  advertiseAddress: string;
  /** More kube-apiserver flags, after the defaults (a test's --runtime-config, say). */
  apiServerArgs?: readonly string[];
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ControlPlane {
  server: string;
  port: number;
  caData: string;
  admin: StaticUser;
  adminKubeConfig: KubeConfig;
  kubeconfigPath: string;
  kubernetesVersion: string;
  /** Stops kube-apiserver only (etcd keeps its data); for fault-injection tests. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port with the same flags, and waits for /readyz. */
  startApiServer(): Promise<void>;
  /** Stops etcd only; startEtcd() brings it back with the same data. */
  stopEtcd(): Promise<void>;
  startEtcd(): Promise<void>;
  pids(): number[];
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 90_000;

/**
 * Starts etcd, kube-apiserver (token authentication, RBAC), kube-controller-manager and kube-scheduler on
 * 127.0.0.1 with free ports, and waits until each is serving. On failure everything started is stopped.
 */
export async function startControlPlane(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const { binaries, dir } = opts;
  const progress = opts.onProgress ?? (() => {});
  const started: SupervisedProcess[] = [];
  const byName = new Map<string, SupervisedProcess>();
  const launch = async (name: string, command: string, args: string[]) => {
    const p = await startProcess({ name, command, args, logFile: join(dir, `${name}.log`) });
    started.push(p);
    byName.set(name, p);
    // A component that dies while we wait for it would otherwise surface only as a timeout.
    void p.exited.then((info) => {
      if (byName.get(name) === p) byName.delete(name);
      return info;
    });
    return p;
  };
  const deadline = () => Date.now() + STARTUP_TIMEOUT_MS;
  const waitFor = <T>(what: string, proc: SupervisedProcess, attempt: () => Promise<T | undefined>) =>
    retryWithBackoff(
      what,
      async () => {
        if (!byName.has(proc.name) || byName.get(proc.name) !== proc) {
          const log = await readFile(proc.logFile, 'utf8').catch(() => '');
          throw new Error(
            `${proc.name} exited during start-up; last log lines:\n${log.split('\n').slice(-15).join('\n')}`,
          );
        }
        return attempt();
      },
      { initialMs: 50, maxMs: 1_000, deadlineEpochMs: deadline(), signal: opts.signal },
    ).catch((error: unknown) => {
      throw new Error(`${what} (log: ${proc.logFile})`, { cause: error });
    });

  try {
    const creds = await writeCredentials(dir);
    const etcdPort = await freePort();
    const peerPort = await freePort();
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcdArgs = [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ];
    const startEtcd = async () => {
      const etcd = await launch('etcd', binaries.etcd, etcdArgs);
      await waitFor('etcd to serve', etcd, async () => {
        const res = await fetch(`${etcdUrl}/health`);
        return res.ok ? true : undefined;
      });
    };
    progress('starting etcd');
    await startEtcd();

    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    const certDir = join(dir, 'pki');
    const apiArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      `--advertise-address=${opts.advertiseAddress}`,
      `--secure-port=${port}`,
      `--cert-dir=${certDir}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-signing-key-file=${creds.saKeyFile}`,
      `--service-account-key-file=${creds.saKeyFile}`,
      `--token-auth-file=${creds.tokenFile}`,
      '--authorization-mode=RBAC',
      // Off by default upstream, on in OpenShift: setting blockOwnerDeletion (v3's checker pods do) then
      // needs update on the owner's finalizers, so the tests see whether the shipped RBAC grants it.
      '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
      '--allow-privileged=true',
      '--profiling=false',
      `--audit-policy-file=${await writeAuditPolicy(dir)}`,
      `--audit-log-path=${join(dir, 'audit.log')}`,
      '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=1s',
      // Benchmarks and tests count requests in this one file: no rotation (the default rotates at 100 MB
      // into audit-<time>.log, which the readers never see; a 1,000-check fleet row passed it midway).
      '--audit-log-maxsize=0',
      ...(opts.apiServerArgs ?? []),
    ];
    const startApiServer = async () => {
      const api = await launch('kube-apiserver', binaries.kubeApiserver, apiArgs);
      await waitFor('kube-apiserver /readyz', api, async () =>
        (await probeStatus(`${server}/readyz`, { token: creds.admin.token })) === 200 ? true : undefined,
      );
    };
    progress('starting kube-apiserver');
    await startApiServer();

    // The self-signed serving certificate is followed by its CA in the same file.
    const caPem = await readFile(join(certDir, 'apiserver.crt'), 'utf8');
    const caData = Buffer.from(caPem).toString('base64');
    const adminKubeConfig = kubeConfigFor({
      server,
      caData,
      token: creds.admin.token,
      user: creds.admin.name,
    });
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeFile(kubeconfigPath, adminKubeConfig.exportConfig(), { mode: 0o600 });
    const version = await adminKubeConfig.makeApiClient(VersionApi).getCode();

    if (binaries.kubeControllerManager) {
      progress('starting kube-controller-manager');
      const kcmPort = await freePort();
      const kcm = await launch('kube-controller-manager', binaries.kubeControllerManager, [
        `--kubeconfig=${kubeconfigPath}`,
        `--service-account-private-key-file=${creds.saKeyFile}`,
        `--root-ca-file=${join(certDir, 'apiserver.crt')}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        '--controllers=*',
      ]);
      // The ServiceAccount controller is what pods need first: every namespace gets "default".
      const core = adminKubeConfig.makeApiClient(CoreV1Api);
      await waitFor('kube-controller-manager to create the default ServiceAccount', kcm, async () => {
        await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
        return true;
      });
    }
    if (binaries.kubeScheduler) {
      progress('starting kube-scheduler');
      const schedPort = await freePort();
      const sched = await launch('kube-scheduler', binaries.kubeScheduler, [
        `--kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${schedPort}`,
      ]);
      await waitFor('kube-scheduler /healthz', sched, async () =>
        (await probeStatus(`https://127.0.0.1:${schedPort}/healthz`)) === 200 ? true : undefined,
      );
    }

    const stopNamed = async (name: string) => {
      const p = byName.get(name);
      if (p) await p.stop();
    };
    return {
      server,
      port,
      caData,
      admin: creds.admin,
      adminKubeConfig,
      kubeconfigPath,
      kubernetesVersion: version.gitVersion,
      stopApiServer: () => stopNamed('kube-apiserver'),
      startApiServer,
      stopEtcd: () => stopNamed('etcd'),
      startEtcd,
      pids: () => [...byName.values()].map((p) => p.pid),
      async stop() {
        await stopAll(started);
      },
    };
  } catch (error) {
    await stopAll(started);
    throw error;
  }
}

/** Stops in reverse start order: clients of the API server first, etcd last. */
async function stopAll(processes: SupervisedProcess[]): Promise<void> {
  for (const p of [...processes].reverse()) await p.stop();
}

/**
 * Metadata-level audit of every request, so benchmarks can count API requests by verb and resource at
 * the server. Watch events are not requests and do not appear.
 */
async function writeAuditPolicy(dir: string): Promise<string> {
  const path = join(dir, 'audit-policy.yaml');
  await writeFile(
    path,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: ["RequestReceived"]',
      'rules:',
      '  - level: Metadata',
      '',
    ].join('\n'),
  );
  return path;
}

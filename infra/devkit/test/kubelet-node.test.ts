import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { nodeLease } from '../src/local/kubelet/lease.ts';
import { buildNode, healthyConditions, type MachineInfo, nodeRepairs } from '../src/local/kubelet/node.ts';

const machine: MachineInfo = {
  cpus: 2,
  memoryBytes: 4 * 1024 * 1024 * 1024,
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  architecture: 'amd64',
  machineID: 'm',
  bootID: 'b',
};
const options = {
  nodeName: 'khrun-node',
  hostIp: '10.213.0.1',
  kubeletPort: 10250,
  kubeletVersion: 'v1.36.3',
};
const T = '2026-01-01T00:00:00Z';

describe('buildNode', () => {
  const node = buildNode(options, machine, T);

  it('reports capacity and allocatable, the host address only and the log port', () => {
    expect(node.status?.capacity).toEqual({ cpu: '2', memory: '4194304Ki', pods: '110' });
    expect(node.status?.allocatable).toEqual(node.status?.capacity);
    expect(node.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.213.0.1' }]);
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(10250);
    expect(node.status?.nodeInfo).toMatchObject({
      kubeletVersion: 'v1.36.3',
      operatingSystem: 'linux',
      architecture: 'amd64',
    });
    expect(node.metadata?.labels?.['kubernetes.io/hostname']).toBe('khrun-node');
    expect(node.spec).toEqual({});
  });

  it('is Ready with no pressure', () => {
    const byType = Object.fromEntries((node.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(byType).toEqual({
      Ready: 'True',
      MemoryPressure: 'False',
      DiskPressure: 'False',
      PIDPressure: 'False',
    });
  });

  it('registers with the taints it was given', () => {
    const taints = [{ key: 'k', effect: 'NoSchedule' }];
    expect(buildNode({ ...options, taints }, machine, T).spec?.taints).toEqual(taints);
  });
});

describe('healthyConditions', () => {
  it('keeps lastTransitionTime of an unchanged condition and moves the heartbeat', () => {
    const previous = [{ type: 'Ready', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' as never }];
    const ready = healthyConditions(previous, T).find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ lastTransitionTime: '2025-01-01T00:00:00Z', lastHeartbeatTime: T });
    const unknown = [
      { type: 'Ready', status: 'Unknown', lastTransitionTime: '2025-01-01T00:00:00Z' as never },
    ];
    expect(healthyConditions(unknown, T).find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(T);
  });
});

describe('nodeRepairs', () => {
  const desired = buildNode(options, machine, T);
  it('asks for nothing on a healthy node', () => {
    expect(nodeRepairs(desired, desired)).toEqual({ status: false, taints: undefined });
  });

  it('asks for a status write when the lifecycle controller marked it Unknown', () => {
    const unknown: V1Node = {
      ...desired,
      status: { ...desired.status, conditions: [{ type: 'Ready', status: 'Unknown' }] },
    };
    expect(nodeRepairs(unknown, desired).status).toBe(true);
  });

  it('removes only the not-ready and unreachable taints', () => {
    const tainted: V1Node = {
      ...desired,
      spec: {
        taints: [
          { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
          { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
          { key: 'mine', effect: 'NoSchedule' },
        ],
      },
    };
    expect(nodeRepairs(tainted, desired).taints).toEqual([{ key: 'mine', effect: 'NoSchedule' }]);
  });
});

describe('nodeLease', () => {
  it('is held by the node, owned by the Node object, with a microsecond renewTime', () => {
    const lease = nodeLease({ nodeName: 'n', nodeUid: 'uid', durationSeconds: 40 });
    expect(lease.metadata).toMatchObject({
      name: 'n',
      namespace: 'kube-node-lease',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'uid' }],
    });
    expect(lease.spec).toMatchObject({ holderIdentity: 'n', leaseDurationSeconds: 40 });
    expect(JSON.stringify(lease.spec?.renewTime)).toMatch(/\.\d{6}Z"$/);
  });
});

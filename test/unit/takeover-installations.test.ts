import { join } from 'node:path';
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import {
  adoptedState,
  handedBackState,
  liveRuns,
  orphanedPods,
  statesInScope,
} from '../../lib/takeover/adoption.ts';
import { findKuberhealthy, TAKEOVER_ANNOTATION } from '../../lib/takeover/installations.ts';
import { readOwnerMarker } from '../../lib/takeover/owner-marker.ts';
import { decideOwnership } from '../../lib/takeover/ownership.ts';
import { selectInstall } from '../../lib/takeover/select-install.ts';
import { fixturesDir, kuberhealthyInstalls, kustomizationObjects } from '../compat/kuberhealthy-installs.ts';
import type { ManifestObject } from '../compat/v2-manifests.ts';

const root = join(import.meta.dirname, '../..');

/** The Deployment of v2.7.1's deploy/kuberhealthy.yaml (and its Helm chart's template), the fields that count. */
const v2: V1Deployment = {
  metadata: { name: 'kuberhealthy', namespace: 'kuberhealthy', labels: { app: 'kuberhealthy' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'kuberhealthy' } },
    template: {
      metadata: { labels: { app: 'kuberhealthy' } },
      spec: {
        containers: [
          {
            name: 'kuberhealthy',
            image: 'kuberhealthy/kuberhealthy:v2.7.0',
            env: [
              { name: 'POD_NAME' },
              { name: 'POD_NAMESPACE' },
              { name: 'CHECK_REAPER_RUN_INTERVAL', value: '30s' },
            ],
          },
        ],
      },
    },
  },
};

/** v3.0.0's deploy/kustomize/base/deployment.yaml: no Deployment labels, image tag `main`, KH_* settings. */
const v3: V1Deployment = {
  metadata: { name: 'kuberhealthy', namespace: 'kh3' },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'kuberhealthy' } },
    template: {
      metadata: { labels: { app: 'kuberhealthy' } },
      spec: {
        containers: [
          {
            name: 'kuberhealthy',
            image: 'docker.io/kuberhealthy/kuberhealthy:main',
            env: [
              { name: 'KH_LISTEN_ADDRESS', value: ':8080' },
              { name: 'KH_TARGET_NAMESPACE', value: 'team-a' },
            ],
          },
        ],
      },
    },
  },
};

const other: V1Deployment = {
  metadata: { name: 'web', namespace: 'shop' },
  spec: {
    selector: { matchLabels: { app: 'web' } },
    template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
  },
};

describe('findKuberhealthy', () => {
  it('finds v2.7.1 and v3.0.0 as their own manifests deploy them, and nothing else', () => {
    const found = findKuberhealthy([other, v3, v2]);
    expect(found).toEqual([
      {
        namespace: 'kh3',
        name: 'kuberhealthy',
        line: 'v3',
        replicas: 2,
        selector: 'app=kuberhealthy',
        // v3.0.0 reads KH_TARGET_NAMESPACE and runs every HealthCheck anyway.
        targets: 'all',
      },
      {
        namespace: 'kuberhealthy',
        name: 'kuberhealthy',
        line: 'v2',
        replicas: 2,
        selector: 'app=kuberhealthy',
        targets: 'all',
      },
    ]);
  });

  it("finds Kuberhealthy's own Deployments, not the khrun server's beside them (infra/deploy, the chart)", () => {
    // The real manifests: v2.7.1's deploy/kuberhealthy.yaml, v3.0.0's base, and khrun's kustomization, whose
    // base runs the server (the serve component only patches it to take reports).
    const deployments = (objects: ManifestObject[]) =>
      objects.filter((o) => o.kind === 'Deployment') as unknown as V1Deployment[];
    const theirs = deployments(kuberhealthyInstalls(fixturesDir).map((t) => t.object));
    const server = deployments(kustomizationObjects(join(root, 'infra/deploy')).map((o) => o.object));
    expect(server.map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`)).toEqual(['khrun/khrun-server']);
    // Installed in Kuberhealthy's own namespace too (Helm lets the release namespace be any).
    const inTheirs = server.map((d) => ({ ...d, metadata: { ...d.metadata, namespace: 'kuberhealthy' } }));
    const found = findKuberhealthy([...theirs, ...server, ...inTheirs]);
    expect(found.map((i) => ({ ref: `${i.namespace}/${i.name}`, line: i.line }))).toEqual([
      { ref: 'kuberhealthy/kuberhealthy', line: 'v2' },
      { ref: 'kuberhealthy/kuberhealthy', line: 'v3' },
    ]);
  });

  it('reads the takeover record khrun left on it, and finds a locally built image by its app label', () => {
    const local = structuredClone(v2);
    local.metadata!.annotations = { [TAKEOVER_ANNOTATION]: JSON.stringify({ replicas: 2, atMs: 7 }) };
    local.spec!.replicas = 0;
    local.spec!.template.spec!.containers[0]!.image = 'khrun.local/kuberhealthy-v2';
    expect(findKuberhealthy([local])[0]).toMatchObject({
      line: 'v2',
      replicas: 0,
      takenOver: { replicas: 2, atMs: 7 },
    });
  });
});

describe('selectInstall', () => {
  const [kh3, kh2] = findKuberhealthy([v3, v2]);
  it('takes the one named, or says which exist', () => {
    expect(selectInstall([kh3!, kh2!], { named: 'kuberhealthy/kuberhealthy', want: 'running' })).toEqual({
      kind: 'found',
      install: kh2,
    });
    expect(selectInstall([kh2!], { named: 'x/y', want: 'running' })).toEqual({
      kind: 'none',
      message: 'no Kuberhealthy Deployment x/y (found: kuberhealthy/kuberhealthy)',
    });
  });
  it('refuses to guess between two', () => {
    expect(selectInstall([kh3!, kh2!], { want: 'running' })).toMatchObject({ kind: 'ambiguous' });
  });
  it('handback finds only one khrun took over', () => {
    expect(selectInstall([kh2!], { want: 'taken-over' })).toMatchObject({ kind: 'none' });
    const taken = { ...kh2!, replicas: 0, takenOver: { replicas: 2, atMs: 1 } };
    expect(selectInstall([kh3!, taken], { want: 'taken-over' })).toEqual({ kind: 'found', install: taken });
  });
});

const KH_UUID = '11111111-2222-4333-8444-555555555555';
const [, install] = findKuberhealthy([v3, v2]);

function khState(namespace: string, name: string): KhState {
  const s = newKhState(name, namespace);
  s.spec = {
    ...s.spec,
    OK: false,
    Errors: ['boom'],
    RunDuration: '1.5s',
    AuthoritativePod: 'kuberhealthy-7d9f8c6b5d-x2k4z',
    uuid: KH_UUID,
    LastRun: '2026-12-01T10:00:00Z',
  };
  return s;
}
const check = (namespace: string, name: string) => ({ metadata: { namespace, name } }) as KhCheck;

describe('adoption', () => {
  it('takes the khstates of its khchecks only', () => {
    const states = [khState('a', 'one'), khState('b', 'two'), khState('a', 'job-state')];
    expect(
      statesInScope(install!, [check('a', 'one'), check('b', 'two')], states).map((s) => s.metadata.name),
    ).toEqual(['one', 'two']);
    expect(
      statesInScope({ ...install!, targets: 'b' }, [check('a', 'one'), check('b', 'two')], states).map(
        (s) => s.metadata.name,
      ),
    ).toEqual(['two']);
  });

  it('keeps v2’s results and marks the khstate as khrun’s; a second takeover changes nothing', () => {
    const before = khState('a', 'one');
    const after = adoptedState(before, install!, 42)!;
    expect(after.spec).toEqual(before.spec);
    expect(readOwnerMarker(after)).toEqual({
      owner: 'khrun',
      from: 'kuberhealthy/kuberhealthy',
      atMs: 42,
      uuid: KH_UUID,
    });
    expect(decideOwnership(after, { takeOver: false }).kind).toBe('khrun');
    expect(adoptedState(after, install!, 43)).toBeUndefined();
  });

  it('removes the unfinished pods of the run Kuberhealthy had in flight, not finished or other pods', () => {
    const pod = (name: string, uuid: string, phase: string) =>
      ({ metadata: { name, labels: { 'kuberhealthy-run-id': uuid } }, status: { phase } }) as V1Pod;
    const pods = [
      pod('live', KH_UUID, 'Running'),
      pod('pending', KH_UUID, 'Pending'),
      pod('done', KH_UUID, 'Succeeded'),
      pod('older', 'x', 'Running'),
    ];
    expect(orphanedPods(khState('a', 'one'), pods).map((p) => p.metadata?.name)).toEqual(['live', 'pending']);
  });

  it('hands back only what it took from that install, and knows which of its runs are live', () => {
    const taken = adoptedState(khState('a', 'one'), install!, 42)!;
    expect(handedBackState(khState('a', 'one'), install!, 50)).toBeUndefined();
    const back = handedBackState(taken, install!, 50)!;
    expect(decideOwnership(back, { takeOver: false })).toMatchObject({
      kind: 'kuberhealthy',
      why: 'handed-back',
    });
    const running = structuredClone(back);
    running.metadata.annotations![ANNOTATION.run] = JSON.stringify({
      uuid: 'r',
      startedAtMs: 0,
      deadlineMs: 100,
      pod: 'p',
      runner: 'x',
      leaseUntilMs: 60,
    });
    expect(liveRuns([back, running], 99)).toEqual([{ check: 'a/one', uuid: 'r', deadlineMs: 100 }]);
    expect(liveRuns([running], 100)).toEqual([]);
  });
});

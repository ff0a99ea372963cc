import type { V1Pod } from '@kubernetes/client-node';
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { buildCheckerPod, KH_ENV, RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { clearEarlierPods, ensureCheckerPod } from '../../lib/run/checker-pod.ts';
import type { EndpointState } from '../../lib/run/endpoint-probe.ts';
import { removeRunPods } from '../../lib/run/remove-pod.ts';
import type { ActiveRun } from '../../lib/state/khstate.ts';
import type { KhCheck, ValidCheck } from '../../lib/state/resources.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

// The run's checker pod: created for a fresh run (under another name when an older run's pod holds it),
// kept for an adopted run while its report may still land, replaced only when its endpoint is known dead.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const OUR_URL = 'http://khrun-report.kuberhealthy.svc:8080/externalCheckStatus';
const OTHER_URL = 'http://10.0.0.9:8080/externalCheckStatus';

const source: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
  spec: {
    runInterval: '10m',
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
  },
};
const validated = validateCheck(source);
if (!validated.ok) throw new Error(validated.reason);
const CHECK: ValidCheck = validated.check;

const run = (uuid: string, pod = `${NAME}-1767268800`): ActiveRun => ({
  uuid,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod,
  runner: 'runner-a',
  holder: 'runner-a/invocation-1',
  leaseUntilMs: T0 + 150_000,
});
const RUN = run('11111111-1111-4111-8111-111111111111');
const EARLIER = run('99999999-9999-4999-8999-999999999999', `${NAME}-1767268200`);

/** A checker pod of the run as khrun creates it, stored in the fake under `name`, reporting to `url`. */
function putPod(
  kube: FakeKube,
  r: ActiveRun,
  opts: { name?: string; url?: string; phase?: string } = {},
): V1Pod {
  const pod = buildCheckerPod({
    check: CHECK,
    runUuid: r.uuid,
    reportingUrl: opts.url ?? OUR_URL,
    deadlineEpochMs: r.deadlineMs,
    nowEpochMs: r.startedAtMs,
  });
  const name = opts.name ?? r.pod;
  pod.metadata = { ...pod.metadata, name, uid: `uid-${name}`, creationTimestamp: new Date(r.startedAtMs) };
  pod.status = { phase: opts.phase ?? 'Running' };
  kube.putPod(pod);
  return pod;
}

function harness(endpoint?: EndpointState) {
  const kube = new FakeKube();
  const probe = vi.fn(async () => endpoint ?? 'unknown');
  const deps: AcquireDeps = {
    kube,
    clock: { nowMs: () => T0 + 5_000 },
    ids: { runUuid: () => RUN.uuid },
    log: { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() },
    ...(endpoint ? { endpoints: { probe } } : {}),
  };
  const ensure = async (opts: { adopted?: boolean; reported?: boolean } = {}) =>
    ensureCheckerPod(deps, CHECK, RUN, {
      adopted: opts.adopted ?? false,
      reported: opts.reported ?? false,
      reportingUrl: OUR_URL,
      signal: new AbortController().signal,
      pods: await kube.listCheckPods(NS, NAME),
    });
  return { kube, deps, probe, ensure };
}

// The run's UUID's first 8 characters: who knows the run finds the pod without a list.
const SUFFIXED = `${RUN.pod}-11111111`;
const urlOf = (pod: V1Pod | undefined) =>
  pod?.spec?.containers?.[0]?.env?.find((e) => e.name === KH_ENV.reportingUrl)?.value;

describe('ensureCheckerPod for a fresh run', () => {
  it("creates the run's pod under the claimed name, labelled with the run and reporting to the run's URL", async () => {
    // Prepare
    const h = harness();
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toMatchObject({ kind: 'created', name: RUN.pod });
    const [created] = h.kube.createdPods;
    expect(created?.metadata?.labels?.[RUN_ID_LABEL]).toBe(RUN.uuid);
    expect(urlOf(created)).toBe(OUR_URL);
  });

  it('goes straight to the suffixed name when the list shows another run holds the claimed one', async () => {
    // Prepare
    const h = harness();
    putPod(h.kube, EARLIER, { name: RUN.pod });
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toMatchObject({ kind: 'created', name: SUFFIXED });
    expect(h.kube.calls.createPod).toBe(1);
  });

  it('takes the suffixed name when the create meets a name taken since the list', async () => {
    // Prepare
    const h = harness();
    h.kube.createPodError = (pod) =>
      pod.metadata?.name === RUN.pod ? new WriteConflict('AlreadyExists') : undefined;
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toMatchObject({ kind: 'created', name: SUFFIXED });
    expect(h.kube.calls.createPod).toBe(2);
  });

  it('fails the run, naming the claimed name, when both names are taken', async () => {
    // Prepare
    const h = harness();
    h.kube.createPodError = () => new WriteConflict('AlreadyExists');
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toEqual({
      kind: 'failed',
      reason: `failed to create pod for checker: the name ${RUN.pod} is taken`,
    });
  });

  it.each([400, 403, 422])('fails the run with the first line of a %i from the API server', async (code) => {
    // Prepare
    const h = harness();
    h.kube.createPodError = () => new FakeApiError(code, 'admission webhook denied the request\nsecond line');
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toEqual({
      kind: 'failed',
      reason: 'failed to create pod for checker: admission webhook denied the request',
    });
  });

  it("fails the run with the Status message of a real API error (an admission policy's refusal, whole)", async () => {
    // Prepare: as client-node raises it, the message is "HTTP-Code: 403\nMessage: ...\nBody: ..."
    const h = harness();
    const refusal =
      'pods "p" is forbidden: ValidatingAdmissionPolicy \'khrun-runner-checker-credentials\' with binding ' +
      "'khrun-runner-checker-credentials' denied request: a checker pod runs as the ServiceAccount sa (not " +
      'default) only in a namespace an admin opened to it: kubectl label namespace checks ' +
      'khrun.dev/checker-credentials=allowed';
    h.kube.createPodError = () =>
      new ApiException(
        403,
        'Unknown API Status Code!',
        JSON.stringify({
          kind: 'Status',
          status: 'Failure',
          message: refusal,
          reason: 'Forbidden',
          code: 403,
        }),
        {},
      );
    // Act
    const ready = await h.ensure();
    // Assess
    expect(ready).toEqual({ kind: 'failed', reason: `failed to create pod for checker: 403: ${refusal}` });
  });

  it('throws any other failure (the API server is down: exit 1, the run stays resumable)', async () => {
    // Prepare
    const h = harness();
    const down = new FakeApiError(503, 'unavailable');
    h.kube.createPodError = () => down;
    // Act, Assess
    await expect(h.ensure()).rejects.toBe(down);
  });
});

describe('ensureCheckerPod for an adopted run', () => {
  it.each([
    { name: 'it reported already', reported: true, url: OTHER_URL, endpoint: 'dead', probed: false },
    {
      name: 'it reports to our own endpoint',
      reported: false,
      url: OUR_URL,
      endpoint: 'dead',
      probed: false,
    },
    { name: 'its endpoint answers', reported: false, url: OTHER_URL, endpoint: 'alive', probed: true },
    {
      name: 'its endpoint cannot be told about',
      reported: false,
      url: OTHER_URL,
      endpoint: 'unknown',
      probed: true,
    },
  ] as const)('keeps the pod when $name', async ({ reported, url, endpoint, probed }) => {
    // Prepare
    const h = harness(endpoint);
    putPod(h.kube, RUN, { url });
    // Act
    const ready = await h.ensure({ adopted: true, reported });
    // Assess
    expect(ready).toEqual({ kind: 'running' });
    expect(h.kube.calls).toMatchObject({ createPod: 0, removePod: 0 });
    expect(h.probe.mock.calls).toEqual(probed ? [[OTHER_URL, expect.any(AbortSignal)]] : []);
  });

  it('keeps the pod when there is no probe at all (every endpoint may be alive)', async () => {
    // Prepare
    const h = harness();
    putPod(h.kube, RUN, { url: OTHER_URL });
    // Act
    const ready = await h.ensure({ adopted: true });
    // Assess
    expect(ready).toEqual({ kind: 'running' });
  });

  it.each([
    { name: 'its endpoint is dead', url: OTHER_URL as string | undefined },
    { name: 'it names no endpoint', url: undefined },
  ])('replaces that very pod (by uid) with one of the same run when $name', async ({ url }) => {
    // Prepare
    const h = harness('dead');
    const old = putPod(h.kube, RUN, { url: OTHER_URL });
    if (url === undefined) {
      const stored = h.kube.pods.get(`${NS}/${RUN.pod}`);
      const container = stored?.spec?.containers[0];
      if (container) container.env = container.env?.filter((e) => e.name !== KH_ENV.reportingUrl);
    }
    const remove = vi.spyOn(h.kube, 'removePod');
    // Act
    const ready = await h.ensure({ adopted: true });
    // Assess: the old pod went by its uid; the new one has the claimed name and our URL.
    expect(remove.mock.calls).toEqual([[NS, RUN.pod, old.metadata?.uid]]);
    expect(ready).toMatchObject({ kind: 'created', name: RUN.pod });
    expect(urlOf(h.kube.podsOfRun(RUN.uuid)[0])).toBe(OUR_URL);
  });

  it('creates a pod for an adopted run that has none left', async () => {
    // Prepare
    const h = harness('alive');
    // Act
    const ready = await h.ensure({ adopted: true });
    // Assess
    expect(ready).toMatchObject({ kind: 'created', name: RUN.pod });
  });
});

describe('clearEarlierPods and removeRunPods', () => {
  it("removes an earlier run's unfinished pod and finished ones beyond the newest `keep`, never the run's own", async () => {
    // Prepare
    const h = harness();
    putPod(h.kube, EARLIER, { name: 'dns-live' });
    for (const [i, name] of ['dns-done-1', 'dns-done-2', 'dns-done-3'].entries()) {
      putPod(h.kube, { ...EARLIER, startedAtMs: T0 - (3 - i) * 60_000 }, { name, phase: 'Succeeded' });
    }
    putPod(h.kube, RUN);
    // Act
    await clearEarlierPods(h.deps, CHECK, RUN.uuid, 1, await h.kube.listCheckPods(NS, NAME));
    // Assess
    expect(h.kube.removedPods.sort()).toEqual(['dns-done-1', 'dns-done-2', 'dns-live']);
    expect([...h.kube.pods.keys()].sort()).toEqual([`${NS}/${RUN.pod}`, `${NS}/dns-done-3`]);
  });

  it("removes every pod of the run, each by its uid, and no other run's", async () => {
    // Prepare
    const h = harness();
    putPod(h.kube, RUN);
    putPod(h.kube, RUN, { name: SUFFIXED });
    putPod(h.kube, EARLIER);
    const remove = vi.spyOn(h.kube, 'removePod');
    // Act
    await removeRunPods(h.deps, CHECK, RUN.uuid);
    // Assess
    expect(remove.mock.calls.sort()).toEqual(
      [
        [NS, RUN.pod, `uid-${RUN.pod}`],
        [NS, SUFFIXED, `uid-${SUFFIXED}`],
      ].sort(),
    );
    expect(h.kube.podsOfRun(EARLIER.uuid)).toHaveLength(1);
  });
});

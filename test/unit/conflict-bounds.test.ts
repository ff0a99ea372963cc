import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { runIteration } from '../../lib/run/iteration.ts';
import { renewLease } from '../../lib/run/renew-lease.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

// How many write conflicts in a row a loop absorbs when nobody configured it: eight, for the runner's claim
// (ITERATION_DEFAULTS) and for a lease renewal (LEASE_MAX_ATTEMPTS). The numbers are spelled out here on
// purpose: a test that reads the constant it checks cannot tell when the constant changes.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const DEFAULT_BOUND = 8;

const check: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
  spec: {
    runInterval: '10m',
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
  },
};

const RUN: ActiveRun = {
  uuid: '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1767268800',
  runner: 'runner-a',
  holder: 'runner-a/invocation-1',
  leaseUntilMs: T0 + 30_000,
};

function stateWith(run: ActiveRun | undefined): KhState {
  const state = newKhState(NAME, NS);
  if (run) state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(run) };
  return state;
}

/** An API server where another writer lands before every replace of ours, so each one conflicts. */
function contested(initial: KhState) {
  const kube = new FakeKube();
  kube.putCheck(check);
  kube.putState(initial);
  const other = () => {
    const current = kube.state(NS, NAME);
    if (current) kube.putState(current);
  };
  kube.beforeReplace = other;
  return kube;
}

describe('the default conflict bounds', () => {
  it('a runner claiming its run gives up after 8 conflicts (ITERATION_DEFAULTS) with RetriesExhausted of the claim', async () => {
    // Prepare
    const kube = contested(stateWith(undefined));
    const deps: AcquireDeps = {
      kube,
      clock: { nowMs: () => T0 },
      ids: { runUuid: () => RUN.uuid },
      log: silentLog,
    };
    // Act
    const error = await runIteration(deps, {
      namespace: NS,
      checkName: NAME,
      runner: 'runner-a',
      holder: 'runner-a/invocation-1',
      reportingUrl: 'http://khrun-report.kuberhealthy.svc:8080/externalCheckStatus',
      signal: new AbortController().signal,
    }).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'claim', attempts: DEFAULT_BOUND });
    expect(kube.conflicts).toHaveLength(DEFAULT_BOUND);
    expect(kube.createdPods).toEqual([]);
  });

  it('a lease renewal gives up after 8 conflicts (LEASE_MAX_ATTEMPTS), for the lease keeper to retry', async () => {
    // Prepare
    const kube = contested(stateWith(RUN));
    // Act
    const error = await renewLease(
      { kube, clock: { nowMs: () => T0 + 15_000 } },
      { namespace: NS, checkName: NAME, run: RUN },
      { leaseMs: 30_000 },
    ).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'lease', attempts: DEFAULT_BOUND });
    expect(kube.conflicts).toHaveLength(DEFAULT_BOUND);
  });
});

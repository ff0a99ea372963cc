import { afterAll, describe, expect, it } from 'vitest';
import { gateCheckEvent } from '../../lib/aws/check-event.ts';
import { invokeAsync, lambdaDispatcher, runCheckEventFor } from '../../lib/aws/lambda-invoke.ts';
import { runFromEvent } from '../../lib/aws/run-from-event.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { runEventFlags } from '../../lib/config/run-check-event.ts';
import { lambdaRunCheckOptions } from '../../lib/config/run-options.ts';
import { signedCheckUrl } from '../../lib/healthcheck/check-url.ts';
import { JobNotFoundError } from '../../lib/job/run-khjob.ts';
import { healthCheckKind } from '../../lib/kinds/healthcheck.ts';
import { khcheckKind } from '../../lib/kinds/khcheck.ts';
import { khjobKind } from '../../lib/kinds/khjob.ts';
import { kindOf } from '../../lib/kinds/registry.ts';
import type { ReportAccess } from '../../lib/report/authorize-report.ts';
import { randomReportKey } from '../../lib/report/report-token.ts';
import { CheckNotFoundError } from '../../lib/run/errors.ts';
import type { SessionSettings } from '../../lib/session/session.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// The runCheck Lambda runs khchecks, khjobs and HealthChecks from one typed event: what the tick sends for
// each kind, how a bad event is refused (before any API call), and which runner each kind reaches.

const plain = kubeconfigFile();
afterAll(() => plain.remove());
const env = { KUBECONFIG: plain.path, KH_EXTERNAL_REPORTING_URL: 'https://r.example/externalCheckStatus' };
const options = (event: unknown) => lambdaRunCheckOptions({ event, env });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the runCheck event', () => {
  it.each([
    [{ checkName: 'c', namespace: 'ns' }, 'khcheck'],
    [{ kind: 'khcheck', checkName: 'c', namespace: 'ns' }, 'khcheck'],
    [{ kind: 'khjob', checkName: 'c', namespace: 'ns' }, 'khjob'],
    [{ kind: 'healthcheck', checkName: 'c', namespace: 'ns' }, 'healthcheck'],
  ])('%j runs a %s', (event, kind) => {
    expect(options(event).target).toEqual({ kind, name: 'c', namespace: 'ns' });
  });

  it('the tick sends each kind it dispatches, and the event it sends is read back as that kind', () => {
    for (const kind of ['khjob', 'healthcheck'] as const) {
      const event = runCheckEventFor({ namespace: 'ns', name: 'x', timeoutMs: 1, kind });
      expect(event).toEqual({ kind, checkName: 'x', namespace: 'ns' });
      expect(options(event).target.kind).toBe(kind);
    }
    expect(runCheckEventFor({ namespace: 'ns', name: 'x', timeoutMs: 1 }).kind).toBe('khcheck');
  });

  it("the tick's dispatcher puts the kind in the Invoke body", async () => {
    const bodies: unknown[] = [];
    const fetch = (async (_url: URL, init: RequestInit) => {
      bodies.push(JSON.parse(String(init.body)));
      return new Response('', { status: 202 });
    }) as unknown as typeof globalThis.fetch;
    const dispatcher = lambdaDispatcher({
      functionName: 'f',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 's' },
      fetch,
    });
    // The tick lists khjobs and HealthChecks only for a dispatcher that can send them.
    expect(dispatcher).toMatchObject({ runsKhJobs: true, runsHealthChecks: true });
    await dispatcher.dispatch({ namespace: 'ns', name: 'hc', timeoutMs: 1, kind: 'healthcheck' }, 'ref');
    await dispatcher.dispatch({ namespace: 'ns', name: 'j', timeoutMs: 1, kind: 'khjob' }, 'ref');
    expect(bodies).toEqual([
      { kind: 'healthcheck', checkName: 'hc', namespace: 'ns' },
      { kind: 'khjob', checkName: 'j', namespace: 'ns' },
    ]);
    await expect(
      invokeAsync(
        {
          functionName: 'f',
          region: 'eu-west-1',
          credentials: { accessKeyId: 'a', secretAccessKey: 's' },
          fetch: (async () => new Response('no', { status: 403 })) as unknown as typeof globalThis.fetch,
        },
        { checkName: 'c', namespace: 'ns' },
      ),
    ).rejects.toThrow(/answered 403/);
  });

  it.each([
    [{ kind: 'HealthCheck', checkName: 'c' }, '"kind" in the event', /names no kind khrun runs/],
    [{ kind: 'khjob' }, '"checkName" in the event', /is required with "kind"/],
    [{ kind: 'khjob', checkName: '  ' }, '"checkName" in the event', /is required with "kind"/],
    [{ checkName: 5 }, '"checkName" in the event', /must be a string/],
    [{ kind: 7, checkName: 'c' }, '"kind" in the event', /must be a string/],
    [{ checkName: 'c', namepsace: 'ns' }, '"namepsace" in the event', /not a field of the runCheck event/],
    [{ healthcheck: 'c' }, '"healthcheck" in the event', /not a field/],
    ['c', 'the event', /must be a JSON object/],
    [['c'], 'the event', /must be a JSON object/],
  ])('%j is refused, naming %s', (event, setting, problem) => {
    const error = configError(() => runEventFlags(event));
    expect(error.setting).toBe(setting);
    expect(error.message).toMatch(problem);
    expect(error.message).toContain('"kind": "healthcheck"');
  });

  it('a bad name in the event is refused as `khrun run` refuses it, naming the field', () => {
    const error = configError(() =>
      options({ kind: 'healthcheck', checkName: 'Not_A_Name', namespace: 'ns' }),
    );
    expect(error.setting).toBe('"checkName" in the event');
    expect(error.value).toBe('Not_A_Name');
  });

  it('a HealthCheck event with CHECK_NAME also set is refused, not guessed', () => {
    const error = configError(() =>
      lambdaRunCheckOptions({
        event: { kind: 'healthcheck', checkName: 'a' },
        env: { ...env, CHECK_NAME: 'b' },
      }),
    );
    expect(error.message).toMatch(/a run is one of them/);
  });

  it("EventBridge's own scheduled event (a rule without input) leaves the names to the environment", () => {
    const scheduled = { 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {}, id: 'x' };
    expect(runEventFlags(scheduled)).toEqual({});
    expect(lambdaRunCheckOptions({ event: scheduled, env: { ...env, HEALTHCHECK_NAME: 'h' } })).toMatchObject(
      { target: { kind: 'healthcheck', name: 'h' } },
    );
  });
});

describe('the runner each kind reaches', () => {
  it('each kind is looked up once in the registry: khcheck, healthcheck and khjob each reach their own adapter', () => {
    expect(kindOf('khcheck')).toBe(khcheckKind);
    expect(kindOf('healthcheck')).toBe(healthCheckKind);
    expect(kindOf('khjob')).toBe(khjobKind);
    expect(new Set([khcheckKind, healthCheckKind, khjobKind].map((k) => k.run)).size).toBe(3);
  });

  const opts = { signal: new AbortController().signal } as SessionSettings & { signal: AbortSignal };
  const target = (kind: 'khcheck' | 'khjob' | 'healthcheck') => ({ kind, namespace: 'ns', name: 'c' });

  it("returns `khrun run`'s JSON; a missing object of any kind is not-found, returned; other errors throw", async () => {
    const recorded = await runFromEvent(
      target('healthcheck'),
      opts,
      async () =>
        ({
          kind: 'recorded',
          adopted: false,
          outcome: { kind: 'Succeeded', ok: true, errors: [], durationMs: 5 },
        }) as never,
    );
    expect(recorded).toMatchObject({ check: 'ns/c', result: 'recorded', kind: 'Succeeded', ok: true });
    const ran = await runFromEvent(target('khjob'), opts, async () => ({
      kind: 'already-ran',
      runUuid: 'u',
      reason: 'ran',
    }));
    expect(ran).toEqual({ check: 'ns/c', result: 'already-ran', reason: 'ran' });
    for (const missing of [new CheckNotFoundError('ns', 'c'), new JobNotFoundError('ns', 'c')]) {
      const notFound = await runFromEvent(target('khjob'), opts, async () => {
        throw missing;
      });
      expect(notFound).toMatchObject({ check: 'ns/c', result: 'not-found', reason: missing.message });
    }
    await expect(
      runFromEvent(target('healthcheck'), opts, async () => {
        throw new Error('api down');
      }),
    ).rejects.toThrow('api down');
  });
});

describe("v3's POST /check behind the report function URL, judged before any API request", () => {
  const key = randomReportKey();
  const access: ReportAccess = { key, unsigned: 'refuse', scope: { namespaces: ['ns'] } };
  const run = { namespace: 'ns', checkName: 'hc', uuid: 'u-1', deadlineMs: 10_000 };
  const query = new URL(signedCheckUrl('https://r.example/check', key, run)).search.slice(1);
  const json = { 'content-type': 'application/json', 'kh-run-uuid': 'u-1' };
  const gate = (over: Partial<Parameters<typeof gateCheckEvent>[0]>, a = access) =>
    gateCheckEvent({ method: 'POST', headers: json, query, nowMs: 5_000, ...over }, a);

  it('a signed report of a live run passes, as its run', () => {
    expect(gate({})).toEqual({ ok: true, uuid: 'u-1', caller: { via: 'signed', run } });
  });

  it.each([
    [{ method: 'GET' }, 405],
    [{ headers: { 'kh-run-uuid': 'u-1' } }, 415],
    [{ headers: { 'content-type': 'application/json' } }, 400],
    [{ headers: { ...json, 'kh-run-uuid': 'u-2' } }, 400],
    [{ query: '' }, 400],
    [{ query: query.replace(/.{4}$/, 'AAAA') }, 400],
    [{ nowMs: 10_001 }, 410],
  ])('%j answers %i', (over, status) => {
    expect(gate(over)).toMatchObject({ ok: false, status });
  });

  it('a bare report passes only where unsigned reports are taken by their header', () => {
    expect(gate({ query: '' }, { ...access, unsigned: 'header' })).toMatchObject({
      ok: true,
      caller: { via: 'unsigned', headerUuid: 'u-1' },
    });
  });

  it('a signed run of a namespace not served is refused', () => {
    expect(gate({}, { ...access, scope: { namespaces: ['other'] } })).toMatchObject({
      ok: false,
      status: 400,
    });
  });
});

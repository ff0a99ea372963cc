import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { LogUnavailableError } from '../../lib/logs/pod-log.ts';
import type { ReadTail } from '../../lib/logs/read-tail.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { cachedTails, type TailKey } from '../../lib/status/log-tail-cache.ts';
import { handleStatusRequest, type StatusRoutesOptions } from '../../lib/status/status-routes.ts';

// GET /api/logs: the log tail of the checker pod of a check's last recorded run, as Kuberhealthy v3's route
// of that path; the pod is named from the state, and no other pod's log is read whatever is asked.

const NOW = Date.UTC(2024, 2, 5, 10, 30, 0);
const STARTED = 1_709_634_000_500;
const HOSTILE = '</script><script>alert("x")</script> & \u2028';

function ranState(name: string, namespace = 'team-a'): KhState {
  const state = newKhState(name, namespace);
  state.spec = { ...state.spec, AuthoritativePod: 'runner-pod' };
  state.metadata.annotations = {
    [ANNOTATION.outcome]: JSON.stringify({
      uuid: 'abcdef12-3456',
      kind: 'Failed',
      startedAtMs: STARTED,
      finishedAtMs: STARTED + 2_000,
      durationMs: 2_000,
    }),
  };
  return state;
}

const healthCheck: HealthCheck = {
  apiVersion: 'kuberhealthy.github.io/v2',
  kind: 'HealthCheck',
  metadata: {
    name: 'v3',
    namespace: 'team-a',
    annotations: {
      [ANNOTATION.outcome]: JSON.stringify({
        uuid: '9f8e7d6c-0000',
        kind: 'Succeeded',
        startedAtMs: STARTED,
        finishedAtMs: STARTED + 1,
        durationMs: 1,
      }),
    },
  },
  spec: {},
  status: { ok: true, lastRunUnix: Math.floor(STARTED / 1000) },
} as unknown as HealthCheck;

function options(read: (key: TailKey) => Promise<ReadTail>, reads: TailKey[] = []): StatusRoutesOptions {
  return {
    states: () => [ranState('dns'), newKhState('never', 'team-a')],
    healthChecks: () => [healthCheck],
    currentMaster: 'khrun-status-0',
    clock: { nowMs: () => NOW },
    readTail: (key) => {
      reads.push(key);
      return read(key);
    },
  };
}

const tail = (lines: string[]): ReadTail => ({ lines, truncated: false, endMissing: false });
/** A reader over the pods that exist: any other pod's log is gone, as the API server answers it. */
const podsThatExist =
  (pods: string[], lines: string[]) =>
  async (k: TailKey): Promise<ReadTail> => {
    if (pods.includes(k.pod)) return tail(lines);
    throw new LogUnavailableError('gone', k.namespace, k.pod, `pod ${k.pod} not found`);
  };
const FIRST = `dns-${Math.floor(STARTED / 1000)}`;
/** The pod name of a run whose first name was held (two runs in one second): the run UUID's first 8. */
const RETRY = `${FIRST}-abcdef12`;
const get = (opts: StatusRoutesOptions, url: string) => handleStatusRequest(opts, { url, hasBody: false });

describe('GET /api/logs', () => {
  it("answers a khcheck's tail as JSON, read from the pod its state names, markup escaped as in /json", async () => {
    const reads: TailKey[] = [];
    const res = await get(
      options(podsThatExist([FIRST], ['starting', HOSTILE]), reads),
      '/api/logs?namespace=team-a&khcheck=dns',
    );
    expect(res?.status).toBe(200);
    expect(res?.headers['content-type']).toBe('application/json; charset=utf-8');
    // The run's retry name first (it holds the run's UUID), then its first name.
    expect(reads).toEqual([
      { namespace: 'team-a', pod: RETRY },
      { namespace: 'team-a', pod: FIRST },
    ]);
    expect(JSON.parse(res?.body ?? '')).toEqual({
      namespace: 'team-a',
      khcheck: 'dns',
      pod: `dns-${Math.floor(STARTED / 1000)}`,
      lines: ['starting', HOSTILE],
      truncated: false,
      endMissing: false,
    });
    expect(res?.body).not.toContain('</script>');
    expect(res?.body).toContain('\\u003c/script\\u003e');
  });

  it("reads the run's own pod when an older run's pod holds its first name (two runs in one second)", async () => {
    const reads: TailKey[] = [];
    const both = podsThatExist([FIRST, RETRY], ['a line of the log']);
    const res = await get(options(both, reads), '/api/logs?namespace=team-a&khcheck=dns');
    expect(JSON.parse(res?.body ?? '')).toMatchObject({ pod: RETRY, lines: ['a line of the log'] });
    expect(reads.map((r) => r.pod)).toEqual([RETRY]);
    // The older run's pod, named by a client, is not the last run's: refused, its log not sent.
    const older = await get(options(both), `/api/logs?namespace=team-a&khcheck=dns&pod=${FIRST}`);
    expect(older?.status).toBe(403);
    expect(older?.body).not.toContain('a line of the log');
  });

  it("answers v3's query (healthcheck, pod, format=text) with the tail as text", async () => {
    const reads: TailKey[] = [];
    const opts = options(podsThatExist(['v3-9f8e7'], ['a', 'b']), reads);
    const res = await get(opts, '/api/logs?namespace=team-a&healthcheck=v3&pod=v3-9f8e7&format=text');
    expect(res).toMatchObject({ status: 200, body: 'a\nb\n' });
    expect(res?.headers).toMatchObject({
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
    });
    expect(reads.map((r) => r.pod)).toEqual(['v3-9f8e7-9f8e7d6c', 'v3-9f8e7']);
  });

  it.each([
    ['/api/logs?namespace=team-a', 400, /give namespace and one of khcheck, khjob or healthcheck/],
    ['/api/logs?khcheck=dns', 400, /give namespace/],
    ['/api/logs?namespace=team-a&khcheck=dns&healthcheck=v3', 400, /one of/],
    ['/api/logs?namespace=team-a&khcheck=dns&format=html', 406, /format must be/],
    ['/api/logs?namespace=team-a&khcheck=nope', 404, /no khcheck team-a\/nope is known/],
    ['/api/logs?namespace=other&khcheck=dns', 404, /no khcheck other\/dns/],
    ['/api/logs?namespace=team-a&khcheck=never', 404, /no run of khcheck team-a\/never was recorded/],
    ['/api/logs?namespace=team-a&khcheck=dns&pod=kube-apiserver', 403, /not the checker pod of the last run/],
    ['/api/logs?namespace=team-a&healthcheck=v3&pod=dns-1', 403, /not the checker pod/],
  ])('%s → %i, reading no log', async (url, status, error) => {
    const reads: TailKey[] = [];
    const res = await get(
      options(async () => tail(['x']), reads),
      url,
    );
    expect(res?.status).toBe(status);
    expect((JSON.parse(res?.body ?? '{}') as { error: string }).error).toMatch(error);
    expect(reads).toEqual([]);
  });

  it('says why a log cannot be read: the pod is gone, not started, or the server may not', async () => {
    const failing = (reason: 'gone' | 'not-started' | 'forbidden') =>
      options(async (k) => {
        throw new LogUnavailableError(reason, k.namespace, k.pod, `pod ${k.pod}: ${reason}`);
      });
    const url = '/api/logs?namespace=team-a&khcheck=dns';
    expect((await get(failing('gone'), url))?.status).toBe(404);
    expect((await get(failing('gone'), url))?.body).toContain('KHRUN_KEEP_FINISHED_PODS');
    expect((await get(failing('not-started'), url))?.status).toBe(409);
    const forbidden = await get(failing('forbidden'), url);
    expect(forbidden?.status).toBe(503);
    expect(forbidden?.body).toContain('pods/log get');
    const other = await get(
      options(async () => Promise.reject(new Error('socket hang up'))),
      url,
    );
    expect(other?.status).toBe(502);
  });

  it('answers 501 where no log reader is given (the status Lambda)', async () => {
    const { readTail: _none, ...withoutLogs } = options(async () => tail([]));
    const res = await get(withoutLogs, '/api/logs?namespace=team-a&khcheck=dns');
    expect(res?.status).toBe(501);
  });
});

describe('cachedTails', () => {
  it('reads a pod once per ttl, shares a read in flight, keeps failures as long, and stays bounded', async () => {
    let nowMs = 0;
    const reads: string[] = [];
    const read = cachedTails(
      async (key) => {
        reads.push(key.pod);
        if (key.pod === 'gone') throw new Error('gone');
        return tail([key.pod]);
      },
      { nowMs: () => nowMs, ttlMs: 60_000, maxEntries: 2 },
    );
    const [a, b] = await Promise.all([
      read({ namespace: 'n', pod: 'p' }),
      read({ namespace: 'n', pod: 'p' }),
    ]);
    expect(a).toBe(b);
    await expect(read({ namespace: 'n', pod: 'gone' })).rejects.toThrow('gone');
    await expect(read({ namespace: 'n', pod: 'gone' })).rejects.toThrow('gone');
    expect(reads).toEqual(['p', 'gone']);
    nowMs = 60_000;
    await read({ namespace: 'n', pod: 'p' });
    expect(reads).toEqual(['p', 'gone', 'p']);
    // A third pod drops the oldest entry (gone), which is then read again.
    await read({ namespace: 'n', pod: 'q' });
    await expect(read({ namespace: 'n', pod: 'gone' })).rejects.toThrow('gone');
    expect(reads).toEqual(['p', 'gone', 'p', 'q', 'gone']);
  });
});

import {
  type HttpLibrary,
  HttpMethod,
  Observable,
  RequestContext,
  ResponseContext,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { serverClock } from '../../lib/kube/server-clock.ts';
import { timedHttpLibrary } from '../../lib/kube/timed-client.ts';

// A local machine whose wall clock is 5 minutes ahead of the API server's, with a scripted monotonic clock.
const SERVER_EPOCH_MS = Date.UTC(2026, 11, 1, 8, 0, 0);
const SKEW_MS = 5 * 60_000;

function machine(skewMs = SKEW_MS) {
  let monoMs = 1_000;
  const server = () => SERVER_EPOCH_MS + monoMs;
  const clock = serverClock({ monoMs: () => monoMs, wallMs: () => server() + skewMs });
  const respond = (roundTripMs: number) => {
    const sentMonoMs = monoMs;
    monoMs += roundTripMs / 2;
    const date = new Date(server()).toUTCString();
    monoMs += roundTripMs / 2;
    clock.observe({ sentMonoMs, receivedMonoMs: monoMs, date });
  };
  return {
    clock,
    server,
    respond,
    advance: (ms: number) => {
      monoMs += ms;
    },
  };
}

describe('serverClock', () => {
  it('reads the local clock until a response arrives, then the API server’s within its bound', () => {
    const m = machine();
    expect(m.clock.reading()).toEqual({ synced: false, samples: 0 });
    expect(m.clock.nowMs()).toBe(m.server() + SKEW_MS);
    m.respond(10);
    const reading = m.clock.reading();
    expect(reading.synced).toBe(true);
    expect(Math.abs(m.clock.nowMs() - m.server())).toBeLessThanOrEqual(reading.uncertaintyMs ?? 0);
    expect(Math.abs((reading.skewMs ?? 0) - SKEW_MS)).toBeLessThanOrEqual(reading.uncertaintyMs ?? 0);
  });

  it('reads a local clock the responses agree with as it is: synchronised machines decide exactly', () => {
    const m = machine(120);
    m.respond(10);
    expect(m.clock.nowMs()).toBe(m.server() + 120);
    m.advance(30_000);
    expect(m.clock.nowMs()).toBe(m.server() + 120);
  });

  it('advances with the monotonic clock between responses', () => {
    const m = machine();
    m.respond(10);
    const before = m.clock.nowMs();
    m.advance(42_000);
    expect(m.clock.nowMs() - before).toBe(42_000);
    m.advance(0.37);
    expect(Number.isInteger(m.clock.nowMs()), 'whole milliseconds, as Date.now()').toBe(true);
  });

  it('tightens with responses across a second boundary and never reads time backwards', () => {
    const m = machine();
    let last = 0;
    for (let i = 0; i < 30; i++) {
      m.respond(6);
      m.advance(94);
      const now = m.clock.nowMs();
      expect(now).toBeGreaterThanOrEqual(last);
      last = now;
    }
    // Requests 100 ms apart locate the server's second boundary to within that spacing.
    const { uncertaintyMs } = m.clock.reading();
    expect(uncertaintyMs).toBeLessThanOrEqual(53);
    expect(Math.abs(m.clock.nowMs() - m.server())).toBeLessThanOrEqual(uncertaintyMs ?? 0);
  });

  it('tells once when the local clock is off by more than the bound', () => {
    const skews: number[] = [];
    let monoMs = 0;
    const clock = serverClock({
      monoMs: () => monoMs,
      wallMs: () => SERVER_EPOCH_MS + monoMs - SKEW_MS,
      onSkew: (s) => skews.push(s),
    });
    for (let i = 0; i < 3; i++) {
      clock.observe({
        sentMonoMs: monoMs,
        receivedMonoMs: monoMs + 2,
        date: new Date(SERVER_EPOCH_MS + monoMs).toUTCString(),
      });
      monoMs += 700;
    }
    expect(skews).toHaveLength(1);
    expect(Math.abs((skews[0] ?? 0) + SKEW_MS)).toBeLessThanOrEqual(1_000);
  });

  it('ignores responses without a usable Date', () => {
    const m = machine();
    m.clock.observe({ sentMonoMs: 0, receivedMonoMs: 1, date: undefined });
    m.clock.observe({ sentMonoMs: 0, receivedMonoMs: 1, date: 'not a date' });
    expect(m.clock.reading().synced).toBe(false);
  });
});

describe('timedHttpLibrary', () => {
  it('feeds the clock from every response, error statuses included, and passes it on unchanged', async () => {
    let monoMs = 5_000;
    const clock = serverClock({ monoMs: () => monoMs, wallMs: () => 0 });
    const date = new Date(SERVER_EPOCH_MS).toUTCString();
    const inner: HttpLibrary = {
      send: () => {
        monoMs += 8;
        return new Observable(
          Promise.resolve(
            new ResponseContext(403, { date }, { text: async () => '', binary: async () => Buffer.alloc(0) }),
          ),
        );
      },
    };
    const response = await timedHttpLibrary(inner, clock)
      .send(new RequestContext('https://127.0.0.1/version', HttpMethod.GET))
      .toPromise();
    expect(response.httpStatusCode).toBe(403);
    expect(clock.reading()).toMatchObject({ synced: true, samples: 1 });
    expect(Math.abs(clock.nowMs() - SERVER_EPOCH_MS)).toBeLessThanOrEqual(1_008);
  });
});

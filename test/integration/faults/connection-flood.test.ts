import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KH_ENV } from '../../../lib/check/pod-builder.ts';
import { DEFAULT_MAX_UNSIGNED_PER_SOURCE } from '../../../lib/report/http-server.ts';
import { readAcceptedReport, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { buildTestBundles } from '../helpers/deploy.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { checkerContainer, type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms } from './helpers/fault-table.ts';
import { podEnv, waitForCheckPod, waitForState } from './helpers/invariants.ts';
import { type Runner, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';

// 2,000 stalled connections against `khrun serve` (the built bundle, as the container runs it), without a
// report key so that bodies are admitted and the server's own caps are what holds: each connection sends
// the headers of a 256 KiB report and 128 KiB of it, then stalls (without caps: 250 MiB of bodies held for
// the request timeout, past the 256 MiB container limit). The flood comes from SOURCES loopback addresses
// (127.1.x.y), PER_SOURCE connections each, within the per-source caps (connections, unsigned reports in
// flight), so what holds is the server's global body budget; it is bounded in count and time, and closed by
// the test. During it a genuine checker reports, and must be recorded.

const kc = adminKubeConfig();
const CONNECTIONS = 2_000;
/** Connections per source address: DEFAULT_MAX_UNSIGNED_PER_SOURCE, so none is refused for its source. */
const PER_SOURCE = DEFAULT_MAX_UNSIGNED_PER_SOURCE;
const SOURCES = CONNECTIONS / PER_SOURCE;
/** The i-th flood connection's local address, in 127.0.0.0/8 (all of it is the loopback interface's). */
const sourceOf = (i: number) => {
  const n = Math.floor(i / PER_SOURCE) + 1;
  return `127.1.${Math.floor(n / 256)}.${n % 256}`;
};
const DECLARED_BYTES = 256 * 1024;
const SENT_BYTES = 128 * 1024;
const CONTAINER_LIMIT_BYTES = 256 * 2 ** 20;
const REQUEST_TIMEOUT_S = 240;
let ns: string;
let gate: Gate;
let serve: { child: ChildProcess; port: number } | undefined;
let runner: Runner | undefined;
const flood: Socket[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-flood');
  gate = await startGate(inject('hostIp'));
}, 60_000);

afterAll(async () => {
  for (const s of flood.splice(0)) s.destroy();
  await stopRunner(runner);
  serve?.child.kill('SIGKILL');
  await gate?.close();
  await dropNamespace(kc, ns);
});

/** `khrun serve` from the bundle, on every address (pods reach it on the host address, the flood on 127.0.0.1). */
async function startServe(): Promise<{ child: ChildProcess; port: number }> {
  const dist = await buildTestBundles();
  const child = spawn(
    process.execPath,
    [
      join(dist, 'khrun.mjs'),
      'serve',
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--namespaces',
      ns,
      '--no-status',
      // Past this test's own timeout: a stalled body is closed by the request timeout (30 s by default),
      // and on a loaded machine the flood plus the genuine report can take longer than that; the test
      // is about what the caps hold while the connections stay open, not about that timeout.
      '--request-timeout-seconds',
      String(REQUEST_TIMEOUT_S),
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: inject('kubeconfigPath'),
        POWERTOOLS_LOG_LEVEL: 'WARN',
        // The genuine report is v2-style, unsigned.
        KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c;
      const m = /reports at http:\/\/\S+?:(\d+)\/externalCheckStatus/.exec(out);
      if (m?.[1]) resolve(Number(m[1]));
    });
    child.stderr?.on('data', (c: Buffer) => {
      out = `${out}${c}`.slice(-20_000);
    });
    child.once('exit', (code) => reject(new Error(`khrun serve exited (${code}) before listening:\n${out}`)));
  });
  return { child, port };
}

/** VmRSS and VmHWM (the peak resident set since the process started) of a live process, in bytes. */
async function memoryOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

interface Stalled {
  /** Resolves once the connection is open and its headers and partial body are written. */
  sent: Promise<void>;
  /** What the server did: nothing yet (still holding the stalled body), answered (status), or closed it. */
  state():
    | { kind: 'held' }
    | { kind: 'answered'; status: number }
    | { kind: 'reset'; code: string }
    | { kind: 'closed' };
}

/** One stalled report from localAddress: the headers of DECLARED_BYTES, SENT_BYTES of body, then nothing. */
function stalledReport(port: number, localAddress: string): Stalled {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  flood.push(socket);
  let answer = '';
  let closed = false;
  socket.on('data', (c: Buffer) => {
    answer += c.toString('latin1');
  });
  let errorCode: string | undefined;
  socket.on('error', (e: NodeJS.ErrnoException) => {
    errorCode = e.code ?? e.message;
  });
  socket.on('close', () => {
    closed = true;
  });
  const sent = new Promise<void>((resolve) => {
    socket.once('connect', () => {
      socket.write(
        `POST /externalCheckStatus HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${DECLARED_BYTES}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(SENT_BYTES, ' '), () => resolve());
    });
    socket.once('close', () => resolve());
  });
  return {
    sent,
    state() {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
      if (status) return { kind: 'answered', status: Number(status) };
      if (closed && errorCode) return { kind: 'reset', code: errorCode };
      return closed ? { kind: 'closed' } : { kind: 'held' };
    },
  };
}

describe('connection flood', () => {
  it('2,000 stalled connections with bodies: memory stays under the container limit and a genuine report is recorded', async () => {
    const row = faultScenario('flood: stalled connections to khrun serve');
    serve = await startServe();
    const pid = serve.child.pid ?? -1;
    const reportUrl = `http://${inject('hostIp')}:${serve.port}/externalCheckStatus`;
    await createCheck(
      kc,
      ns,
      'genuine',
      {
        containers: [
          checkerContainer({ gateUrl: gate.waitUrl('genuine'), notifyUrl: gate.notifyUrl('genuine') }),
        ],
      },
      { timeout: '5m' },
    );
    runner = startRunner('genuine', ns, { KH_EXTERNAL_REPORTING_URL: reportUrl, KHRUN_LEASE_SECONDS: '600' });
    const pod = await waitForCheckPod(
      kc,
      ns,
      'genuine',
      (p) => podEnv(p, KH_ENV.reportingUrl) !== undefined,
      'its pod',
    );
    const uuid = podEnv(pod, KH_ENV.runUuid);
    const baseline = await memoryOf(pid);

    let peakRss = baseline.rss;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, (await memoryOf(pid)).rss);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const started = performance.now();
    const stalled = Array.from({ length: CONNECTIONS }, (_, i) =>
      stalledReport(serve?.port ?? 0, sourceOf(i)),
    );
    await Promise.all(stalled.map((s) => s.sent));
    const floodedMs = performance.now() - started;

    // The genuine checker reports now, while the flood holds its connections.
    const gateOpenedAt = performance.now();
    gate.open('genuine');
    // Measured, not asserted here: the row is written before the assertions below.
    const stored = await waitForState(
      kc,
      ns,
      'genuine',
      (s) => (readAcceptedReport(s)?.uuid === uuid ? true : undefined),
      'the genuine report stored',
      60_000,
    ).catch(() => false);
    const reportMs = performance.now() - gateOpenedAt;
    // The checker says "reporting now" just before it sends: that is the report counted as sent.
    const reported = await gate.notified('genuine', 1_000).then(
      () => 1,
      () => 0,
    );
    const states = stalled.map((s) => s.state());
    const held = states.filter((s) => s.kind === 'held').length;
    const refused503 = states.filter((s) => s.kind === 'answered' && s.status === 503).length;
    // A refusal answers 503 and closes at once, with the rest of the stalled body unread: the kernel then
    // resets the connection, and the reset can overtake the 503 on its way into this client's buffer
    // (a few dozen of 2,000 on a busy machine). Counted apart; an answerless clean close is still a defect.
    const reset = states.filter((s) => s.kind === 'reset' && s.code === 'ECONNRESET').length;
    const other = states.filter(
      (s) =>
        s.kind !== 'held' &&
        !(s.kind === 'answered' && s.status === 503) &&
        !(s.kind === 'reset' && s.code === 'ECONNRESET'),
    );
    const during = await memoryOf(pid);
    sampling = false;
    await sampler;
    for (const s of flood.splice(0)) s.destroy();

    const exit = await runner.done;
    const recorded = readLastOutcome(await readState(kc, ns, 'genuine'))?.uuid === uuid ? 1 : 0;
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
    const figures = `VmRSS ${mib(baseline.rss)} before, peak ${mib(peakRss)}, VmHWM ${mib(during.hwm)}; ${held} held, ${refused503} refused 503, ${reset} reset after a refusal, ${other.length} other`;
    await row.record({
      fault: `flood: ${CONNECTIONS} stalled connections to khrun serve from ${SOURCES} loopback addresses, each the headers of a ${DECLARED_BYTES / 1024} KiB report and ${SENT_BYTES / 1024} KiB of it`,
      runs: CONNECTIONS,
      outcome: `opened in ${ms(floodedMs)}; ${held} held within the 32 MiB body budget, ${refused503} answered 503 + Retry-After at once${reset ? ` (${reset} more refused whose reset overtook the 503)` : ''}; serve's RSS (bundle, /proc VmRSS sampled every 50 ms) ${mib(baseline.rss)} before, peak ${mib(peakRss)}, VmHWM ${mib(during.hwm)} (limit 256 MiB); a genuine checker's report sent during the flood was ${stored ? `stored ${ms(reportMs)} after its gate opened` : `NOT stored within ${ms(reportMs)}`} and ${recorded ? 'recorded' : 'NOT recorded'}`,
      reported,
      recorded,
    });
    expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(during.hwm, `serve's peak resident set (limit 256 MiB): ${figures}`).toBeLessThan(
      CONTAINER_LIMIT_BYTES,
    );
    // Every connection either still held (its body within the budget) or refused at once (503, or its reset).
    expect(other, figures).toEqual([]);
    expect(held + refused503 + reset).toBe(CONNECTIONS);
    expect(held, 'the flood was still holding connections when the genuine report got in').toBeGreaterThan(0);
    expect(reported, 'the genuine checker sent its report').toBe(1);
    expect(stored, 'the genuine report stored during the flood').toBe(true);
    expect(recorded).toBe(1);
  }, 180_000);
});

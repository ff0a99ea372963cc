import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Container, V1EnvVar } from '@kubernetes/client-node';

/**
 * The checker program the fault tests run in checker pods (the host's node: the process kubelet runs
 * commands, not images). It reports the way a careful client does: with the kh-run-uuid header, retrying
 * its POST on transport errors and on any status but 200 and 400 with capped backoff, for a bounded time.
 * Optional steps, by env: CHECKER_GATE (wait until this URL answers 200), CHECKER_DELAY_MS,
 * CHECKER_NOTIFY (GET this URL just before reporting), CHECKER_EXEC (run this program to report instead,
 * e.g. the Go checkclient, with the JSON list CHECKER_EXEC_ARGS), CHECKER_OK / CHECKER_ERRORS (the report).
 */
const CHECKER_SCRIPT = `
const env = process.env;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = Date.now() + Number(env.CHECKER_RETRY_MS || 60000);
async function retrying(what, fn) {
  let delay = 100;
  for (;;) {
    let last;
    try { const r = await fn(); if (r !== undefined) return r; } catch (e) { last = e; }
    if (Date.now() > until) throw new Error('gave up on ' + what + (last ? ': ' + last.message : ''));
    await sleep(delay);
    delay = Math.min(delay * 2, 2000);
  }
}
(async () => {
  if (env.CHECKER_GATE) await retrying('the gate', async () => ((await fetch(env.CHECKER_GATE)).ok ? true : undefined));
  if (env.CHECKER_DELAY_MS) await sleep(Number(env.CHECKER_DELAY_MS));
  if (env.CHECKER_NOTIFY) await fetch(env.CHECKER_NOTIFY).catch(() => undefined);
  if (env.CHECKER_EXEC) {
    const r = require('node:child_process').spawnSync(env.CHECKER_EXEC, JSON.parse(env.CHECKER_EXEC_ARGS || '[]'), { stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
  const body = JSON.stringify({ OK: env.CHECKER_OK !== 'false', Errors: JSON.parse(env.CHECKER_ERRORS || '[]') });
  const status = await retrying('the report', async () => {
    const r = await fetch(env.KH_REPORTING_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'kh-run-uuid': env.KH_RUN_UUID },
      body,
    });
    await r.text();
    return r.status === 200 || r.status === 400 ? r.status : undefined;
  });
  console.log('report answered ' + status);
  process.exit(status === 200 ? 0 : 1);
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

export interface CheckerOptions {
  gateUrl?: string;
  delayMs?: number;
  notifyUrl?: string;
  ok?: boolean;
  errors?: string[];
  /** Report through this program instead (after the gate), e.g. the Go checkclient binary. */
  exec?: string;
  execArgs?: string[];
  retryMs?: number;
  env?: V1EnvVar[];
}

/** The npm `kuberhealthy` client's report (no header: identified by source IP; no retry), as a program. */
export const NPM_CLIENT_REPORT = [
  '-e',
  "require('kuberhealthy').ReportSuccess().then(() => console.log('sent'), (e) => { console.error(e.message); process.exit(1); })",
];

/** A checker container that reports as CheckerOptions says. */
export function checkerContainer(opts: CheckerOptions = {}, extra: Partial<V1Container> = {}): V1Container {
  const env: V1EnvVar[] = [...(opts.env ?? [])];
  const set = (name: string, value: string | number | undefined) => {
    if (value !== undefined) env.push({ name, value: String(value) });
  };
  set('CHECKER_GATE', opts.gateUrl);
  set('CHECKER_DELAY_MS', opts.delayMs);
  set('CHECKER_NOTIFY', opts.notifyUrl);
  set('CHECKER_OK', opts.ok === undefined ? undefined : String(opts.ok));
  set('CHECKER_ERRORS', opts.errors ? JSON.stringify(opts.errors) : undefined);
  set('CHECKER_EXEC', opts.exec);
  set('CHECKER_EXEC_ARGS', opts.execArgs ? JSON.stringify(opts.execArgs) : undefined);
  set('CHECKER_RETRY_MS', opts.retryMs);
  return {
    name: 'check',
    image: 'node:20-alpine',
    command: [process.execPath, '-e', CHECKER_SCRIPT],
    env,
    ...extra,
  };
}

/**
 * A gate on the pod network's host address: checker pods wait at waitUrl(name) until the test opens it, and
 * say "reporting now" at notifyUrl(name). Lets a test put a report exactly inside a fault window without
 * guessing delays. close() answers every held request (503) and stops listening.
 */
export interface Gate {
  waitUrl(name: string): string;
  notifyUrl(name: string): string;
  open(name: string): void;
  /** Closes it again: checkers that come later wait. */
  shut(name: string): void;
  /** Resolves when a checker has called notifyUrl(name); rejects after timeoutMs. */
  notified(name: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startGate(host: string): Promise<Gate> {
  const opened = new Set<string>();
  const held = new Map<string, ServerResponse[]>();
  const notes = new Set<string>();
  const noteWaiters = new Map<string, Array<() => void>>();
  const server = createServer((req, res) => {
    const [, kind, name = ''] = (req.url ?? '').split('/');
    if (kind === 'wait') {
      if (opened.has(name)) res.end('open');
      else held.set(name, [...(held.get(name) ?? []), res]);
    } else if (kind === 'notify') {
      notes.add(name);
      for (const wake of noteWaiters.get(name) ?? []) wake();
      noteWaiters.delete(name);
      res.end('noted');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    waitUrl: (name) => `${base}/wait/${name}`,
    notifyUrl: (name) => `${base}/notify/${name}`,
    open(name) {
      opened.add(name);
      for (const res of held.get(name) ?? []) res.end('open');
      held.delete(name);
    },
    shut(name) {
      opened.delete(name);
    },
    notified(name, timeoutMs) {
      if (notes.has(name)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no checker of ${name} reported in within ${timeoutMs} ms`)),
          timeoutMs,
        );
        noteWaiters.set(name, [
          ...(noteWaiters.get(name) ?? []),
          () => {
            clearTimeout(timer);
            resolve();
          },
        ]);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const list of held.values()) for (const res of list) res.writeHead(503).end();
        held.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

import type { Clock } from '../core/clock.ts';
import { EXIT } from '../core/exit-codes.ts';
import type { Log } from '../core/log.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { type HandbackResult, handBack } from '../takeover/hand-back.ts';
import { installRef } from '../takeover/installations.ts';
import type { TakeoverKube } from '../takeover/port.ts';
import { type TakeoverResult, takeOver } from '../takeover/take-over.ts';
import { formatDocument } from './document.ts';

interface CommonOptions {
  kube: TakeoverKube;
  clock: Clock;
  log: Log;
  signal: AbortSignal;
  output: 'text' | 'json' | 'yaml';
  write: (line: string) => void;
}

function summary(r: Extract<TakeoverResult, { kind: 'taken-over' }>) {
  return {
    result: r.kind,
    kuberhealthy: installRef(r.install),
    line: r.install.line,
    replicas: r.replicas,
    adopted: r.adopted,
    closedRuns: r.closedRuns,
    unchanged: r.unchanged,
  };
}

/**
 * `khrun takeover`: exit 0 when Kuberhealthy is at zero and its khstates are khrun's; 2 when there is no
 * (single) Kuberhealthy to take over, or a v3 one and no way to reach HealthChecks; 1 on an API failure.
 */
export async function takeoverCommand(
  opts: CommonOptions & { from?: string; namespace?: string; podsGoneTimeoutMs: number },
) {
  const r = await takeOver(opts, {
    from: opts.from,
    podsGoneTimeoutMs: opts.podsGoneTimeoutMs,
    signal: opts.signal,
  });
  if (r.kind !== 'taken-over') {
    opts.write(`khrun: takeover: ${safe(r.message)}`);
    return EXIT.usage;
  }
  const s = summary(r);
  if (opts.output !== 'text') {
    opts.write(formatDocument(s, opts.output));
    return EXIT.ok;
  }
  opts.write(`Kuberhealthy ${s.kuberhealthy} (${s.line}) scaled from ${s.replicas} to 0; its pods are gone.`);
  for (const check of s.adopted) {
    opts.write(
      `  ${safe(check)}: taken over${s.closedRuns.includes(check) ? ' (its run in flight stopped)' : ''}`,
    );
  }
  const states = s.line === 'v3' ? 'HealthChecks' : 'khstates';
  for (const check of s.unchanged) opts.write(`  ${safe(check)}: already taken over`);
  opts.write(
    `${s.adopted.length} ${states} taken over; khrun runs them from now on ` +
      `(${s.line === 'v3' ? 'each due a runInterval after its last start' : 'each due at once'}). ` +
      `To give them back: khrun handback --to ${s.kuberhealthy}`,
  );
  return EXIT.ok;
}

/** `khrun handback`: exit 0 when Kuberhealthy is scaled back up; 2 when khrun took over none. */
export async function handbackCommand(
  opts: CommonOptions & { to?: string; namespace?: string; replicas?: number },
) {
  const r: HandbackResult = await handBack(opts, {
    to: opts.to,
    replicas: opts.replicas,
    signal: opts.signal,
  });
  if (r.kind !== 'handed-back') {
    opts.write(`khrun: handback: ${safe(r.message)}`);
    return EXIT.usage;
  }
  const s = {
    result: r.kind,
    kuberhealthy: installRef(r.install),
    replicas: r.replicas,
    handedBack: r.handedBack,
    waitedFor: r.waitedFor,
  };
  if (opts.output !== 'text') {
    opts.write(formatDocument(s, opts.output));
    return EXIT.ok;
  }
  for (const check of s.handedBack) opts.write(`  ${safe(check)}: handed back`);
  if (s.waitedFor.length)
    opts.write(`waited for khrun's runs of ${s.waitedFor.map((c) => safe(c)).join(', ')} to finish`);
  opts.write(
    `Kuberhealthy ${s.kuberhealthy} scaled back to ${s.replicas}; khrun refuses these checks from now on.`,
  );
  return EXIT.ok;
}

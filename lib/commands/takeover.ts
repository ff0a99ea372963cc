import type { Clock } from '../core/clock.ts';
import { EXIT } from '../core/exit-codes.ts';
import type { Log } from '../core/log.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { type HandbackResult, handBack } from '../takeover/hand-back.ts';
import { installRef } from '../takeover/installations.ts';
import { planHandBack, planTakeOver } from '../takeover/plan.ts';
import type { TakeoverKube } from '../takeover/port.ts';
import { type TakeoverResult, takeOver } from '../takeover/take-over.ts';
import { formatDocument } from './document.ts';
import {
  handbackPlanDocument,
  handbackPlanLines,
  takeoverPlanDocument,
  takeoverPlanLines,
} from './takeover-plan.ts';

/**
 * How a command that changes production objects goes ahead: `dry-run` (print what would change, change
 * nothing), `confirmed` (--yes), `ask` (a terminal: the plan on stderr, then the question; false: nothing
 * changed), `unconfirmed` (neither --yes nor a terminal: refused before anything is read, exit 2).
 */
export type Confirmation =
  | { kind: 'dry-run' }
  | { kind: 'confirmed' }
  | { kind: 'ask'; ask: (question: string) => Promise<boolean> }
  | { kind: 'unconfirmed' };

/** The flag and terminal → how to go ahead (pure). --dry-run wins over --yes: it never changes anything. */
export function confirmationOf(opts: {
  dryRun: boolean;
  yes: boolean;
  ask: ((question: string) => Promise<boolean>) | undefined;
}): Confirmation {
  if (opts.dryRun) return { kind: 'dry-run' };
  if (opts.yes) return { kind: 'confirmed' };
  return opts.ask ? { kind: 'ask', ask: opts.ask } : { kind: 'unconfirmed' };
}

const unconfirmed = (command: string, what: string) =>
  `khrun: ${command} ${what}: pass --yes to go ahead (or --dry-run to see what would change); nothing was changed`;

interface CommonOptions {
  kube: TakeoverKube;
  clock: Clock;
  log: Log;
  signal: AbortSignal;
  output: 'text' | 'json' | 'yaml';
  /** The result (stdout: with json or yaml, only the document). */
  write: (line: string) => void;
  /** Why nothing was done (stderr). */
  warn: (line: string) => void;
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
 * `khrun takeover`: exit 0 when Kuberhealthy is at zero and its khstates are khrun's (with --dry-run: when
 * there is one to take over; nothing written); 2 when there is no (single) Kuberhealthy to take over, or a v3
 * one and no way to reach HealthChecks, or it was not confirmed; 1 on an API failure.
 */
export async function takeoverCommand(
  opts: CommonOptions & {
    from?: string;
    namespace?: string;
    podsGoneTimeoutMs: number;
    confirmation: Confirmation;
  },
) {
  const { confirmation } = opts;
  if (confirmation.kind === 'unconfirmed') {
    opts.warn(unconfirmed('takeover', 'scales a Kuberhealthy Deployment to zero and runs its checks'));
    return EXIT.usage;
  }
  if (confirmation.kind !== 'confirmed') {
    const plan = await planTakeOver(opts, { from: opts.from, namespace: opts.namespace });
    if (plan.kind !== 'plan') {
      opts.warn(`khrun: takeover: ${safe(plan.message)}`);
      return EXIT.usage;
    }
    if (confirmation.kind === 'dry-run') {
      if (opts.output !== 'text') opts.write(formatDocument(takeoverPlanDocument(plan), opts.output));
      else
        for (const line of [...takeoverPlanLines(plan), 'Nothing was changed (--dry-run).']) opts.write(line);
      return EXIT.ok;
    }
    for (const line of takeoverPlanLines(plan)) opts.warn(line);
    if (!(await confirmation.ask(`Take over from ${installRef(plan.install)}? [y/N] `))) {
      opts.warn('khrun: takeover: not confirmed; nothing was changed');
      return EXIT.usage;
    }
  }
  const r = await takeOver(opts, {
    from: opts.from,
    podsGoneTimeoutMs: opts.podsGoneTimeoutMs,
    signal: opts.signal,
  });
  if (r.kind !== 'taken-over') {
    opts.warn(`khrun: takeover: ${safe(r.message)}`);
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

/**
 * `khrun handback`: exit 0 when Kuberhealthy is scaled back up (with --dry-run: when there is one to hand
 * back to; nothing written); 2 when khrun took over none, or it was not confirmed; 1 on an API failure.
 */
export async function handbackCommand(
  opts: CommonOptions & { to?: string; namespace?: string; replicas?: number; confirmation: Confirmation },
) {
  const { confirmation } = opts;
  if (confirmation.kind === 'unconfirmed') {
    opts.warn(unconfirmed('handback', 'gives the checks back to Kuberhealthy and scales it up'));
    return EXIT.usage;
  }
  if (confirmation.kind !== 'confirmed') {
    const plan = await planHandBack(opts, {
      to: opts.to,
      namespace: opts.namespace,
      replicas: opts.replicas,
    });
    if (plan.kind !== 'plan') {
      opts.warn(`khrun: handback: ${safe(plan.message)}`);
      return EXIT.usage;
    }
    if (confirmation.kind === 'dry-run') {
      if (opts.output !== 'text') opts.write(formatDocument(handbackPlanDocument(plan), opts.output));
      else
        for (const line of [...handbackPlanLines(plan), 'Nothing was changed (--dry-run).']) opts.write(line);
      return EXIT.ok;
    }
    for (const line of handbackPlanLines(plan)) opts.warn(line);
    if (!(await confirmation.ask(`Hand back to ${installRef(plan.install)}? [y/N] `))) {
      opts.warn('khrun: handback: not confirmed; nothing was changed');
      return EXIT.usage;
    }
  }
  const r: HandbackResult = await handBack(opts, {
    to: opts.to,
    replicas: opts.replicas,
    signal: opts.signal,
  });
  if (r.kind !== 'handed-back') {
    opts.warn(`khrun: handback: ${safe(r.message)}`);
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

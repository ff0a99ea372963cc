import { escapeControls as safe } from '../core/terminal-text.ts';
import { installRef } from '../takeover/installations.ts';
import type { HandbackPlan, TakeoverPlan } from '../takeover/plan.ts';

type Found<P> = Extract<P, { kind: 'plan' }>;

/** `takeover --dry-run -o json|yaml`: what would change, as one document. */
export function takeoverPlanDocument(p: Found<TakeoverPlan>) {
  return {
    dryRun: true,
    kuberhealthy: installRef(p.install),
    line: p.install.line,
    replicas: { from: p.replicas, to: 0 },
    takeOver: p.takeOver,
    inFlight: p.inFlight,
    unchanged: p.unchanged,
  };
}

/** What `khrun takeover` would do, in lines for a person: the dry run's output and the prompt's preamble. */
export function takeoverPlanLines(p: Found<TakeoverPlan>): string[] {
  const states = p.install.line === 'v3' ? 'HealthChecks' : 'khstates';
  const inFlight = new Map(p.inFlight.map((f) => [f.check, f.pods]));
  return [
    `khrun takeover would scale Deployment ${installRef(p.install)} (Kuberhealthy ${p.install.line}) from ` +
      `${p.replicas} replicas to 0 and wait for its pods to be gone, then take over ${p.takeOver.length} ${states}; ` +
      `khrun runs those checks from then on (${p.install.line === 'v3' ? 'each due a runInterval after its last start' : 'each due at once'}):`,
    ...p.takeOver.map((check) => {
      const pods = inFlight.get(check);
      const removed = pods === 1 ? '1 checker pod' : `${pods} checker pods`;
      return `  ${safe(check)}${pods === undefined ? '' : ` (its run in flight stopped: ${removed} removed)`}`;
    }),
    ...p.unchanged.map((check) => `  ${safe(check)}: already taken over, left as it is`),
  ];
}

/** `handback --dry-run -o json|yaml`. */
export function handbackPlanDocument(p: Found<HandbackPlan>) {
  return {
    dryRun: true,
    kuberhealthy: installRef(p.install),
    line: p.install.line,
    replicas: { from: p.install.replicas, to: p.replicas },
    handBack: p.handBack,
    waitFor: p.waitFor,
  };
}

export function handbackPlanLines(p: Found<HandbackPlan>): string[] {
  const waiting = new Set(p.waitFor);
  return [
    `khrun handback would give ${p.handBack.length} checks back to Kuberhealthy ${installRef(p.install)} ` +
      `(khrun refuses them from then on), wait for khrun's runs of them still live, then scale it from ` +
      `${p.install.replicas} to ${p.replicas} replicas:`,
    ...p.handBack.map(
      (c) => `  ${safe(c)}${waiting.has(c) ? " (a run of khrun's is live: waited for)" : ''}`,
    ),
  ];
}

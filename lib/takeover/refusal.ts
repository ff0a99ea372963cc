import { shortId } from '../core/ids.ts';
import { type Ownership, type Refusal, V3_FINALIZER } from './ownership.ts';

type Theirs = Extract<Ownership, { kind: 'kuberhealthy' }>;

/**
 * The Deployment a v2 pod name comes from: a Deployment's pods are named `<deployment>-<template hash>-<5
 * chars>`. A guess, said as one, for a message: the khstate holds the pod name only.
 */
export function deploymentOfPod(pod: string): string | undefined {
  const match = /^(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$/.exec(pod);
  return match?.[1];
}

function kuberhealthyNamed(o: Theirs): string {
  if (o.deployment) return `Kuberhealthy (Deployment ${o.deployment})`;
  const guess = o.pod ? deploymentOfPod(o.pod) : undefined;
  if (o.pod) return `Kuberhealthy (pod ${o.pod}${guess ? `, Deployment ${guess}` : ''})`;
  return 'Kuberhealthy';
}

/**
 * The refusal of a run Kuberhealthy also does, in words a person acts on: who runs the check, how khrun
 * knows, why running it here too is wrong, and the exact commands that make it right.
 */
export function refusalFor(check: { namespace: string; name: string }, o: Theirs): Refusal {
  const ref = `${check.namespace}/${check.name}`;
  const who = kuberhealthyNamed(o);
  const run = o.runUuid ? ` (its run ${shortId(o.runUuid)} is in the khstate's spec.uuid)` : '';
  const evidence = {
    'kuberhealthy-ran-last': `${who} runs ${ref}${run}`,
    'kuberhealthy-resumed': `${who} runs ${ref} again since khrun took it over${run}`,
    'handed-back': `${ref} was handed back to ${who} with khrun handback`,
    'v3-finalizer': `Kuberhealthy v3 runs ${ref} (its finalizer ${V3_FINALIZER} is on the HealthCheck)`,
    'v3-recorded': `Kuberhealthy v3 runs ${ref} (the HealthCheck's status holds results khrun did not record)`,
  }[o.why];
  const from = o.deployment ? ` --from ${o.deployment}` : '';
  const state = o.why === 'v3-finalizer' || o.why === 'v3-recorded' ? 'HealthCheck' : 'khstate';
  const reason =
    `${evidence}; running it here too would run the check twice each interval, with two runs racing for ` +
    `one ${state}. To move it to khrun: khrun takeover${from} (scales Kuberhealthy to zero and adopts its ` +
    `${state}s); if Kuberhealthy no longer runs it: khrun run --take-over (or KHRUN_TAKE_OVER=true).`;
  return { kind: 'refused', reason, ownership: o };
}

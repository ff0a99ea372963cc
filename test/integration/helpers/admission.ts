import { statusCodeOf } from '../../../lib/kube/errors.ts';

/**
 * A refusal by one of the admission policies: 403 (a validation's reason Forbidden) or 422 (a binding whose
 * parameters are missing, e.g. a namespace without khchecks), naming the policy; not RBAC's 403 or another
 * admission plugin's.
 */
export const REFUSED = /^(403|422) .*ValidatingAdmissionPolicy/s;

/**
 * Whether `answer` (from `refusal`) is a refusal by the named policy. A probe that waits for a policy to
 * take effect asks this, not REFUSED: another policy refusing the same request proves nothing about it.
 */
export function refusedBy(policy: string, answer: string): boolean {
  return REFUSED.test(answer) && answer.includes(`'${policy}'`);
}

/** 'allowed', or the status and body of the refused request, for asserting which rule refused it. */
export async function refusal(request: Promise<unknown>): Promise<string> {
  try {
    await request;
    return 'allowed';
  } catch (error) {
    const body = (error as { body?: unknown }).body;
    return `${statusCodeOf(error)} ${typeof body === 'string' ? body : JSON.stringify(body)}`;
  }
}

/** Polls `ready` every 250 ms until it holds or the deadline passes; whether it held. */
export async function pollUntil(ready: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) return false;
    await new Promise<void>((resolve) => setTimeout(resolve, 250).unref());
  }
  return true;
}

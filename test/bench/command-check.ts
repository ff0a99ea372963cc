import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';

export interface CommandCheckSpec {
  /** The checker's command: a local program on the process kubelet (the image name only labels it). */
  command: string[];
  runInterval: string;
  timeout: string;
}

/** A khcheck whose one container runs command. */
export async function createCommandCheck(
  kc: KubeConfig,
  namespace: string,
  name: string,
  spec: CommandCheckSpec,
): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHCHECK_PLURAL,
    namespace,
    body: {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyCheck',
      metadata: { name, namespace },
      spec: {
        runInterval: spec.runInterval,
        timeout: spec.timeout,
        podSpec: { containers: [{ name: 'check', image: 'bench-checker', command: spec.command }] },
      },
    },
  });
}

/** n khchecks named prefix0..prefix(n-1), 20 at a time. */
export async function createCommandChecks(
  kc: KubeConfig,
  namespace: string,
  n: number,
  spec: CommandCheckSpec,
  prefix = 'c',
): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  for (let i = 0; i < n; i += 20) {
    await Promise.all(names.slice(i, i + 20).map((name) => createCommandCheck(kc, namespace, name, spec)));
  }
  return names;
}

/** A checker that waits seconds and then reports success with the Go checkclient program. */
export const sleepThenReport = (goChecker: string, seconds: number): string[] =>
  seconds > 0 ? ['/bin/sh', '-c', `sleep ${seconds}; exec ${goChecker}`] : [goChecker];

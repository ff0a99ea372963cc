import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { CliContext } from '../../functions/cli/context.ts';
import { main } from '../../functions/cli/main.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
import { isTransientApiError, isUnreachable } from '../../lib/kube/errors.ts';
import { ApiServerUnreachableError } from '../../lib/kube/unreachable.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// An API server that cannot be reached is one line naming the kubeconfig's server and what to check, not
// client-node's "request to https://.../khchecks failed, reason: connect ECONNREFUSED"; and the runner
// still takes it for the transient failure it was (retried, exit 1). Traffic only to 127.0.0.1.

/** A port on 127.0.0.1 that nothing listens on: one the OS handed out, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('an API server that cannot be reached', () => {
  it('`khrun status -o json`: one line naming the server and what to check, nothing on stdout, exit 1', async () => {
    const server = `http://127.0.0.1:${await closedPort()}`;
    const kubeconfig = kubeconfigFile({ clusterExtra: { server, 'insecure-skip-tls-verify': true } });
    try {
      const out: string[] = [];
      const err: string[] = [];
      const ctx: CliContext = {
        root: kubeconfig.dir,
        env: { KUBECONFIG: kubeconfig.path },
        write: (line) => out.push(line),
        warn: (line) => err.push(line),
      };
      const code = await main(['status', '-o', 'json'], ctx, async () => {
        throw new Error('no developer command here');
      });
      expect(code).toBe(EXIT.runnerError);
      expect(out).toEqual([]);
      expect(err).toHaveLength(1);
      expect(err[0]).toBe(
        `khrun: cannot reach the Kubernetes API server at ${server} (connection refused): check that the ` +
          "cluster is running and reachable from here, and that the kubeconfig's context is the one meant " +
          '(kubectl config current-context; --context or --kubeconfig pick another)',
      );
    } finally {
      kubeconfig.remove();
    }
  });

  it('keeps the transport error as its cause, and is unreachable and transient as that was', () => {
    const refused = Object.assign(
      new Error('request to https://10.0.0.1:6443/api failed, reason: connect ECONNREFUSED'),
      {
        type: 'system',
        code: 'ECONNREFUSED',
      },
    );
    const error = new ApiServerUnreachableError('https://10.0.0.1:6443', refused);
    expect(error).toMatchObject({
      server: 'https://10.0.0.1:6443',
      code: 'ECONNREFUSED',
      reason: 'connection refused',
    });
    expect(error.cause).toBe(refused);
    expect(error.message).toBe(
      'cannot reach the Kubernetes API server https://10.0.0.1:6443 (connection refused): request to https://10.0.0.1:6443/api failed, reason: connect ECONNREFUSED',
    );
    expect(isUnreachable(error)).toBe(true);
    expect(isTransientApiError(error)).toBe(true);
    const unknownCode = new ApiServerUnreachableError(
      'https://h',
      Object.assign(new Error('x'), { code: 'EPIPE' }),
    );
    expect(unknownCode.reason).toBe('EPIPE');
  });
});

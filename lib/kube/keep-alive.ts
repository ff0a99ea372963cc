import { Agent, type AgentOptions } from 'node:https';
import type { KubeConfig, RequestContext, SecurityAuthentication } from '@kubernetes/client-node';

/**
 * client-node makes a new https.Agent for every request (KubeConfig.applySecurityAuthentication), so no
 * connection is reused: every request pays a TCP and TLS handshake, on the client and on the API server.
 * A tick that claims 1,000 checks makes 1,000 of them. This authentication does what the KubeConfig does
 * (headers, token, client certificate) and then hands the request one keep-alive agent per authentication
 * made here (a client object holds one, kube-client.ts, for all its typed clients), made from the same TLS
 * options, made again only when those change (a rotated client certificate).
 * Proxy agents are left as they are.
 */
export function keepAliveAuth(kc: KubeConfig): SecurityAuthentication {
  const slot: { agent?: Agent; options?: AgentOptions } = {};
  return {
    getName: () => 'kubeconfig authentication, one keep-alive agent',
    async applySecurityAuthentication(context: RequestContext) {
      await kc.applySecurityAuthentication(context);
      const made = context.getAgent();
      if (!(made instanceof Agent) || made.constructor !== Agent) return;
      if (!slot.agent || !sameTls(slot.options ?? {}, made.options)) {
        slot.agent?.destroy();
        slot.options = made.options;
        slot.agent = new Agent({ ...made.options, keepAlive: true });
      }
      made.destroy();
      context.setAgent(slot.agent);
    },
  };
}

const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

function sameTls(a: AgentOptions, b: AgentOptions): boolean {
  return TLS_FIELDS.every((f) => {
    const x = a[f] as unknown;
    const y = b[f] as unknown;
    if (Buffer.isBuffer(x) && Buffer.isBuffer(y)) return x.equals(y);
    return x === y || JSON.stringify(x) === JSON.stringify(y);
  });
}

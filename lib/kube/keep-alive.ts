import { Agent, type AgentOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { KubeConfig, RequestContext, SecurityAuthentication } from '@kubernetes/client-node';

/**
 * The kubeconfig's authentication, handing every request of a client object its one keep-alive agent.
 * share() hands the same agent to what client-node gives an agent of its own apart from the typed clients
 * (a Watch's fetch, a plain GET's https.request).
 */
export interface KeepAliveAuth extends SecurityAuthentication {
  /** The client object's keep-alive agent in place of an https.Agent client-node made; anything else unchanged. */
  share<A>(made: A): A;
}

/**
 * client-node makes a new https.Agent for every request (KubeConfig.applySecurityAuthentication, and
 * applyToHTTPSOptions for a Watch or a plain GET), so no connection is reused: every request pays a TCP and
 * TLS handshake, on the client and on the API server. A tick that claims 1,000 checks makes 1,000 of them.
 * This authentication does what the KubeConfig does (headers, token, client certificate) and then hands
 * the request one keep-alive agent per authentication made here (a client object holds one,
 * kube-client.ts, for all its typed clients, its watches and its lists), made from the same TLS options,
 * made again only when those change (a rotated client certificate).
 *
 * The agent carries one SecureContext made from those options. Without it, every new connection builds
 * its own, and Node builds a context given a CA by copying its whole root store first: in the bench's
 * fleet section that was the runner's largest cost after loading its bundle (a connection per check for
 * its pod watch, which holds a socket of its own). With it, a watch's connection also resumes the agent's
 * TLS session instead of a full handshake.
 * Proxy agents are left as they are.
 */
export function keepAliveAuth(kc: KubeConfig): KeepAliveAuth {
  const slot: { agent?: Agent; options?: AgentOptions } = {};
  const share = <A>(given: A): A => {
    const made = given as unknown;
    if (!(made instanceof Agent) || made.constructor !== Agent) return given;
    if (!slot.agent || !sameTls(slot.options ?? {}, made.options)) {
      slot.agent?.destroy();
      slot.options = made.options;
      const { ca, cert, key, pfx, passphrase } = made.options;
      const secureContext = createSecureContext({ ca, cert, key, pfx, passphrase });
      slot.agent = new Agent({ ...made.options, keepAlive: true, secureContext });
    }
    made.destroy();
    return slot.agent as A;
  };
  return {
    getName: () => 'kubeconfig authentication, one keep-alive agent',
    async applySecurityAuthentication(context: RequestContext) {
      await kc.applySecurityAuthentication(context);
      const made = context.getAgent();
      const agent = share(made);
      if (agent && agent !== made) context.setAgent(agent);
    },
    share,
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

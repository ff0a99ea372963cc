import { request } from 'node:https';
import type { KubeClient } from './kube-client.ts';

/**
 * A GET of any API path, returning the parsed JSON. client-node's typed clients need one method per
 * resource; list-and-watch wants one code path for pods and custom resources alike. Every response feeds
 * the client object's API server clock, and it is sent within the client's requests-in-flight limit.
 */
export async function getJson<T>(
  client: Pick<KubeClient, 'kc' | 'clock' | 'within' | 'auth'>,
  path: string,
  query: Record<string, string | undefined>,
  signal?: AbortSignal,
): Promise<T> {
  const { kc, clock } = client;
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
  const opts: import('node:https').RequestOptions = {
    method: 'GET',
    headers: { accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(opts);
  // The client object's keep-alive agent, not the one applyToHTTPSOptions made for this request alone.
  opts.agent = client.auth.share(opts.agent);
  return client.within(
    () =>
      new Promise<T>((resolve, reject) => {
        const sentMonoMs = clock.monoMs();
        const req = request(url, { ...opts, signal }, (res) => {
          clock.observe({ sentMonoMs, receivedMonoMs: clock.monoMs(), date: res.headers.date });
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('error', reject);
          res.once('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if ((res.statusCode ?? 0) >= 300) {
              const error = Object.assign(
                new Error(`GET ${path}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`),
                { statusCode: res.statusCode, headers: res.headers },
              );
              reject(error);
              return;
            }
            try {
              resolve(JSON.parse(text) as T);
            } catch (error) {
              reject(error);
            }
          });
        });
        req.once('error', reject);
        req.end();
      }),
  );
}

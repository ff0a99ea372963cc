import { ApiException, type V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { KubeletApi } from '../src/local/kubelet/api.ts';
import { PodStatusWriter } from '../src/local/kubelet/status-writer.ts';

const pod = (rv: string, uid = 'u'): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid, resourceVersion: rv },
});
const apiError = (code: number) =>
  new ApiException(code, 'error', JSON.stringify({ kind: 'Status', code }), {});

function fakeApi(responses: Array<number | 'ok'>, reads: V1Pod[] = []) {
  const writes: V1Pod[] = [];
  const api: KubeletApi = {
    readConfigMap: async () => undefined,
    readSecret: async () => undefined,
    requestToken: async () => '',
    readPod: async () => reads.shift(),
    async replacePodStatus(body) {
      writes.push(body);
      const next = responses.shift() ?? 'ok';
      if (next !== 'ok') throw apiError(next);
      return {
        ...body,
        metadata: { ...body.metadata, resourceVersion: String(Number(body.metadata?.resourceVersion) + 1) },
      };
    },
    deletePodNow: async () => {},
  };
  return { api, writes };
}

describe('PodStatusWriter', () => {
  it('writes the latest status with the pod’s resourceVersion, and skips unchanged statuses', async () => {
    const { api, writes } = fakeApi([]);
    let phase = 'Pending';
    const writer = new PodStatusWriter({ api, initial: pod('5'), build: () => ({ phase }), log: () => {} });
    await writer.flush();
    phase = 'Running';
    await writer.flush();
    await writer.flush();
    expect(writes.map((w) => [w.metadata?.resourceVersion, w.status?.phase])).toEqual([
      ['5', 'Pending'],
      ['6', 'Running'],
    ]);
  });

  it('re-reads the pod on a conflict and writes again on top of it', async () => {
    const { api, writes } = fakeApi([409], [pod('9')]);
    const writer = new PodStatusWriter({
      api,
      initial: pod('5'),
      build: () => ({ phase: 'Running' }),
      log: () => {},
    });
    await writer.flush();
    expect(writes.map((w) => w.metadata?.resourceVersion)).toEqual(['5', '9']);
  });

  it('retries with back-off while the API server is unavailable', async () => {
    const { api, writes } = fakeApi([503, 503, 'ok']);
    const lines: string[] = [];
    const writer = new PodStatusWriter({
      api,
      initial: pod('5'),
      build: () => ({ phase: 'Running' }),
      log: (line) => lines.push(line),
      initialBackoffMs: 1,
    });
    await writer.flush();
    expect(writes).toHaveLength(3);
    expect(lines).toEqual(['pod status write failed; retrying', 'pod status write failed; retrying']);
  });

  it('stops for good when the pod is gone or replaced by another uid', async () => {
    const gone = fakeApi([404]);
    const w1 = new PodStatusWriter({
      api: gone.api,
      initial: pod('5'),
      build: () => ({ phase: 'Running' }),
      log: () => {},
    });
    await w1.flush();
    expect(w1.isClosed).toBe(true);

    const replaced = fakeApi([409], [pod('7', 'other-uid')]);
    const w2 = new PodStatusWriter({
      api: replaced.api,
      initial: pod('5'),
      build: () => ({ phase: 'Running' }),
      log: () => {},
    });
    await w2.flush();
    expect(w2.isClosed).toBe(true);
    expect(replaced.writes).toHaveLength(1);
  });

  it('ignores watch copies older than what it has', async () => {
    const { api } = fakeApi([]);
    const writer = new PodStatusWriter({ api, initial: pod('5'), build: () => ({}), log: () => {} });
    writer.setLatest(pod('3'));
    expect(writer.pod.metadata?.resourceVersion).toBe('5');
    writer.setLatest(pod('8'));
    expect(writer.pod.metadata?.resourceVersion).toBe('8');
    writer.setLatest(pod('9', 'other'));
    expect(writer.pod.metadata?.resourceVersion).toBe('8');
  });
});

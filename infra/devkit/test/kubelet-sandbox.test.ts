import { describe, expect, it } from 'vitest';
import { batchedSandboxOps } from '../src/local/kubelet/sandbox.ts';
import {
  type PodNetworkOp,
  podNetworkForSlot,
  podNetworkResults,
  podNetworkScript,
} from '../src/local/pod-network.ts';

/** A batch runner whose batches finish only when the test says so, recording each batch's ops. */
function heldBatches(fail: ReadonlySet<string> = new Set()) {
  const batches: string[][] = [];
  const finish: Array<() => void> = [];
  const run = (ops: readonly PodNetworkOp[]) => {
    batches.push(ops.map((op) => `${op.kind} ${op.podUid}`));
    return new Promise<Array<string | undefined>>((resolve) => {
      finish.push(() =>
        resolve(ops.map((op) => (fail.has(op.podUid) ? 'RTNETLINK answers: File exists' : undefined))),
      );
    });
  };
  return { run, batches, done: (i: number) => finish[i]!() };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('batchedSandboxOps', () => {
  it('runs at most two batches at once; what waits goes in the next batch, removals first, at most max', async () => {
    const { run, batches, done } = heldBatches();
    const ops = batchedSandboxOps({
      run,
      exists: () => true,
      netnsOf: (uid) => `ns-${uid}`,
      pids: async () => [],
      batchesAtOnce: 2,
      batchMax: 3,
    });
    const creates = ['a', 'b', 'c', 'd', 'e', 'f'].map((uid) => ops.create(uid, '10.0.0.1'));
    await settle();
    expect(batches).toEqual([['create a'], ['create b']]);
    const removals = [ops.delete('x'), ops.delete('y')];
    await settle();
    expect(batches).toHaveLength(2);
    done(0);
    await settle();
    expect(batches[2]).toEqual(['delete x', 'delete y', 'create c']);
    done(1);
    await settle();
    expect(batches[3]).toEqual(['create d', 'create e', 'create f']);
    done(2);
    done(3);
    await Promise.all(removals);
    expect(await Promise.all(creates)).toEqual(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((uid) => ({ netns: `ns-${uid}` })),
    );
  });

  it('fails only the op that failed, saying why; a removal with nothing left runs nothing', async () => {
    const { run, batches, done } = heldBatches(new Set(['b']));
    const ops = batchedSandboxOps({
      run,
      exists: (uid) => uid !== 'gone',
      netnsOf: (uid) => `ns-${uid}`,
      pids: async () => [],
      batchesAtOnce: 1,
    });
    const a = ops.create('a', '10.0.0.1');
    const b = ops.create('b', '10.0.0.2');
    const c = ops.create('c', '10.0.0.3');
    await ops.delete('gone');
    await settle();
    done(0);
    await settle();
    done(1);
    await expect(a).resolves.toEqual({ netns: 'ns-a' });
    await expect(b).rejects.toThrow('pod network ns-b: RTNETLINK answers: File exists');
    await expect(c).resolves.toEqual({ netns: 'ns-c' });
    expect(batches).toEqual([['create a'], ['create b', 'create c']]);
  });
});

describe('the pod network script', () => {
  const net = podNetworkForSlot(3);

  it('removes before it adds, each step printing its own line', () => {
    const script = podNetworkScript(net, [
      { kind: 'delete', podUid: 'u1' },
      { kind: 'create', podUid: 'u2', podIp: '10.216.1.7' },
    ]);
    expect(script).toMatch(
      /\ndel 'khrun3-[0-9a-f]{10}' 'khv[0-9a-f]{10}'; echo "0 ok"\nadd 1 'khrun3-[0-9a-f]{10}' 'khv[0-9a-f]{10}' 'netns add /,
    );
    expect(script).toContain('master khrun3');
    expect(script).toContain('addr add 10.216.1.7/16 dev eth0');
  });

  it("reads each op's result; an op with no line failed with the script", () => {
    expect(podNetworkResults(3, '0 ok\n1 fail Cannot find device "khrun3" \n')).toEqual([
      undefined,
      'Cannot find device "khrun3"',
      'the pod network script ended before this step',
    ]);
    expect(podNetworkResults(2, '0 ok\n', 'pod network script failed: killed')).toEqual([
      undefined,
      'pod network script failed: killed',
    ]);
  });
});

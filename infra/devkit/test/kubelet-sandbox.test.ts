import { describe, expect, it } from 'vitest';
import { queuedSandboxOps, type SandboxOps } from '../src/local/kubelet/sandbox.ts';

/** Ops whose calls finish only when the test says so, recording the order they started in. */
function heldOps() {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const held = (name: string) =>
    new Promise<void>((resolve) => {
      started.push(name);
      finish.set(name, resolve);
    });
  const raw: SandboxOps = {
    create: async (uid) => {
      await held(`create ${uid}`);
      return { netns: `ns-${uid}` };
    },
    delete: (uid) => held(`delete ${uid}`),
    pids: async () => [],
  };
  return { raw, started, done: (name: string) => finish.get(name)?.() };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('queuedSandboxOps', () => {
  it('runs at most max at once and starts a removal before the setups already waiting', async () => {
    const { raw, started, done } = heldOps();
    const ops = queuedSandboxOps(raw, 2);
    const calls = [
      ops.create('a', 'ip'),
      ops.create('b', 'ip'),
      ops.create('c', 'ip'),
      ops.create('d', 'ip'),
    ];
    await settle();
    expect(started).toEqual(['create a', 'create b']);
    const removal = ops.delete('x');
    await settle();
    expect(started).toEqual(['create a', 'create b']);
    done('create a');
    await settle();
    expect(started).toEqual(['create a', 'create b', 'delete x']);
    done('create b');
    done('delete x');
    await removal;
    await settle();
    expect(started).toEqual(['create a', 'create b', 'delete x', 'create c', 'create d']);
    done('create c');
    done('create d');
    await expect(Promise.all(calls)).resolves.toHaveLength(4);
  });
});

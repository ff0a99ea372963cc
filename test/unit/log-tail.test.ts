import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { renderDescribeLog } from '../../lib/commands/describe-log.ts';
import { checkerPodSelector, lastRunPodNames, runPodsNewestFirst } from '../../lib/logs/checker-pods.ts';
import { logTail } from '../../lib/logs/log-tail.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';

// The checker's log tail beside a check: at most 20 lines and 4 KiB, ending where the log ends, cut on a
// character boundary; the pod it is read from, found without listing pods (the server) or by label (a
// person's CLI).

describe('logTail', () => {
  it('keeps the last lines within the line bound, and says when it cut', () => {
    const log = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    const tail = logTail(`${log}\n`, { maxLines: 20, maxBytes: 4096 });
    expect(tail.lines).toHaveLength(20);
    expect(tail.lines[0]).toBe('line 10');
    expect(tail.lines.at(-1)).toBe('line 29');
    expect(tail.truncated).toBe(true);
    expect(logTail('a\nb\n', { maxLines: 20, maxBytes: 4096 })).toEqual({
      lines: ['a', 'b'],
      truncated: false,
    });
  });

  it('keeps whole lines within the byte bound, counting UTF-8 bytes and newlines', () => {
    const tail = logTail(`${'a'.repeat(10)}\n${'b'.repeat(10)}\n${'ü'.repeat(5)}\n`, {
      maxLines: 20,
      maxBytes: 22,
    });
    // 'ü' is 2 bytes: 10 + 1 for the last line, 10 + 1 for the one before: 22.
    expect(tail).toEqual({ lines: ['b'.repeat(10), 'ü'.repeat(5)], truncated: true });
  });

  it('keeps the end of one line longer than the budget, on a character boundary', () => {
    const tail = logTail(`start ${'😀'.repeat(100)}`, { maxLines: 20, maxBytes: 11 });
    expect(tail.truncated).toBe(true);
    expect(tail.lines).toHaveLength(1);
    // 10 bytes left for the text: two 4-byte emoji fit, the partial third is dropped rather than mangled.
    expect(tail.lines[0]).toBe('😀😀');
    expect(Buffer.byteLength(tail.lines[0] ?? '', 'utf8')).toBeLessThanOrEqual(10);
  });

  it('reads \\r\\n as one line end, an empty log as no lines, and keeps what the server already cut', () => {
    expect(logTail('a\r\nb\r\n').lines).toEqual(['a', 'b']);
    expect(logTail('')).toEqual({ lines: [], truncated: false });
    expect(logTail('x\n', undefined, true)).toEqual({ lines: ['x'], truncated: true });
  });

  it('keeps a checker’s words as they are: escaping is each front end’s', () => {
    const nasty = '<script>alert(1)</script> \u001b[2J';
    expect(logTail(nasty).lines).toEqual([nasty]);
  });
});

describe("describe's log section", () => {
  it('escapes control characters and indents each line', () => {
    const lines = renderDescribeLog(
      {
        pod: 'dns-1',
        container: 'c',
        tail: { lines: ['ok', 'clear \u001b[2J screen', '\u202eevil'], truncated: true, endMissing: false },
      },
      false,
    );
    expect(lines).toEqual([
      'Log:           pod dns-1, container c (last 3 lines; khrun logs prints the whole log)',
      '  ok',
      '  clear \\x1b[2J screen',
      '  \\u202eevil',
    ]);
    expect(renderDescribeLog({ pod: 'p', container: 'c', error: 'pod x/p no longer exists' }, false)).toEqual(
      ['Log:           pod p, container c', '  <pod x/p no longer exists>'],
    );
  });
});

describe('checker pods', () => {
  const pod = (name: string, createdS: number, deleting = false): V1Pod => ({
    metadata: {
      name,
      creationTimestamp: new Date(createdS * 1000) as unknown as Date,
      ...(deleting ? { deletionTimestamp: new Date() as unknown as Date } : {}),
    },
  });

  it('are found by the labels each kind puts on them', () => {
    expect(checkerPodSelector('khcheck', 'dns')).toBe(
      'kuberhealthy-check-name=dns,khrun.dev/workload!=KHJob',
    );
    expect(checkerPodSelector('khjob', 'm')).toBe('kuberhealthy-check-name=m,khrun.dev/workload=KHJob');
    expect(checkerPodSelector('healthcheck', 'h')).toBe('healthcheck=h');
  });

  it('newest first, pods being deleted left out', () => {
    const names = runPodsNewestFirst([pod('a', 1), pod('c', 3), pod('gone', 4, true), pod('b', 2)]).map(
      (p) => p.metadata?.name,
    );
    expect(names).toEqual(['c', 'b', 'a']);
  });

  it("the last run's pod is named from the state: its retry name first, then v2's name for a khcheck, v3's for a HealthCheck", () => {
    const state = newKhState('DNS', 'a');
    expect(lastRunPodNames('khcheck', 'DNS', state)).toEqual([]);
    state.metadata.annotations = {
      [ANNOTATION.outcome]: JSON.stringify({
        uuid: 'ABCDEF12-0000',
        kind: 'Succeeded',
        startedAtMs: 1_700_000_000_999,
        finishedAtMs: 1_700_000_002_000,
        durationMs: 1,
      }),
    };
    expect(lastRunPodNames('khcheck', 'DNS', state)).toEqual(['dns-1700000000-abcdef12', 'dns-1700000000']);
    expect(lastRunPodNames('healthcheck', 'DNS', state)).toEqual(['dns-abcde-abcdef12', 'dns-abcde']);
  });
});

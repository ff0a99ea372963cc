import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { renderDescribe } from '../../lib/commands/describe.ts';
import { runResultText } from '../../lib/commands/run.ts';
import { renderStatusTable, statusRows } from '../../lib/commands/status.ts';
import { stripAnsi } from '../../lib/commands/table.ts';
import { describeEntry } from '../../lib/commands/tick.ts';
import { escapeControls } from '../../lib/core/terminal-text.ts';
import { appendHistory, HISTORY_ANNOTATION } from '../../lib/state/history.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck } from '../../lib/state/resources.ts';

// Error texts come from checker pods (anyone who can run a pod can write them) and reach a person's
// terminal through describe, status -o wide and run's text output: escape sequences must arrive as text.

const NOW = Date.UTC(2024, 2, 5, 10, 30, 0);
const CLEAR = '\u001b[2J\u001b[H';
const HOSTILE = [
  `clear${CLEAR}screen`,
  'over\rwritten',
  'csi\u009b31mC1',
  'bell\u0007 del\u007f nul\u0000 bs\u0008',
  'osc\u001b]0;pwned title\u0007',
  'flip\u202eevil',
];
/** Any character a terminal acts on, besides the newline the layouts use on purpose. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for the control characters themselves
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('escapeControls', () => {
  it.each([
    ['\u001b[2J', '\\x1b[2J'],
    ['a\rb', 'a\\rb'],
    ['tab\there', 'tab\\there'],
    ['\u009b31m', '\\x9b31m'],
    ['\u007f', '\\x7f'],
    ['\u0000\u0007\u0008', '\\x00\\x07\\x08'],
    ['rtl \u202e and \u2066', 'rtl \\u202e and \\u2066'],
    ['line\nnext', 'line\\nnext'],
    ['ünïcødé ✓ 日本語 🚀 👩‍👩‍👧 "quotes" \\back', 'ünïcødé ✓ 日本語 🚀 👩‍👩‍👧 "quotes" \\back'],
  ])('%j is shown as %j', (input, shown) => {
    expect(escapeControls(input)).toBe(shown);
  });

  it('keeps newlines where the layout is multi-line, and escapes the rest', () => {
    expect(escapeControls('a\nb\r\nc\u001b[0m', { keepNewlines: true })).toBe('a\nb\\r\nc\\x1b[0m');
  });
});

function hostileState() {
  const state = newKhState('evil', 'team');
  state.spec = {
    ...state.spec,
    OK: false,
    Errors: HOSTILE,
    LastRun: '2024-03-05T10:25:00Z',
    RunDuration: '1s',
    AuthoritativePod: `runner${CLEAR}`,
    Node: 'node\u001b]8;;http://x\u0007',
    uuid: '11111111-2222-4333-8444-555555555555',
  };
  state.metadata.annotations = {
    [HISTORY_ANNOTATION]: appendHistory(undefined, {
      atMs: NOW - 60_000,
      kind: 'Failed',
      ok: false,
      durationMs: 1000,
      error: HOSTILE.join(' '),
    }),
    [ANNOTATION.outcome]: JSON.stringify({
      uuid: state.spec.uuid,
      kind: `Failed${CLEAR}`,
      ok: false,
      errors: HOSTILE,
      startedAtMs: NOW - 61_000,
      finishedAtMs: NOW - 60_000,
      durationMs: 1000,
    }),
  };
  return state;
}

const check: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: 'evil', namespace: 'team' },
  spec: {
    runInterval: `1m${CLEAR}`,
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: `img\u001b[8m` }] },
  },
};

const pod: V1Pod = {
  metadata: {
    name: 'evil-1',
    labels: { [RUN_ID_LABEL]: '11111111-2222-4333-8444-555555555555' },
    creationTimestamp: new Date(NOW - 61_000),
  },
  spec: { containers: [], nodeName: `n\u001b[2J` },
  status: {
    phase: 'Failed',
    containerStatuses: [
      {
        name: 'main',
        image: 'img',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: {
          terminated: {
            exitCode: 1,
            reason: `Error${CLEAR}`,
            startedAt: new Date(NOW - 60_500),
            finishedAt: new Date(NOW - 60_100),
          },
        },
      },
    ],
  },
};

const event: CoreV1Event = {
  metadata: { name: 'e1' },
  involvedObject: {},
  type: 'Warning',
  reason: `Failed${CLEAR}`,
  message: HOSTILE.join(' '),
  source: { component: 'khrun\u001b[31m' },
  lastTimestamp: new Date(NOW - 30_000),
};

describe('what khrun prints to a terminal carries no control characters from the cluster', () => {
  it.each([false, true])('khrun describe (color %s)', (color) => {
    const text = renderDescribe(
      { name: 'evil', namespace: 'team', check, state: hostileState(), pods: [pod], events: [event] },
      { nowMs: NOW, color },
    );
    // With color, the only escape sequences are khrun's own SGR codes.
    const own = color ? stripAnsi(text) : text;
    expect(own).not.toMatch(RAW_CONTROL);
    expect(text).toContain('clear\\x1b[2J\\x1b[Hscreen');
    expect(text).toContain('over\\rwritten');
    expect(text).toContain('csi\\x9b31mC1');
  });

  it('khrun status and status -o wide', () => {
    for (const wide of [false, true]) {
      const text = renderStatusTable(statusRows([check], [hostileState()]), {
        nowMs: NOW,
        color: false,
        wide,
      });
      expect(text, wide ? 'wide' : 'table').not.toMatch(RAW_CONTROL);
      expect(text).toContain('clear\\x1b[2J');
    }
  });

  it("khrun run's text result: errors one per line, their control characters escaped", () => {
    const text = runResultText({
      check: 'team/evil',
      result: 'recorded',
      kind: 'Failed',
      durationMs: 1000,
      errors: HOSTILE,
    });
    expect(text).not.toMatch(RAW_CONTROL);
    expect(text.split('\n')).toHaveLength(1 + HOSTILE.length);
    expect(runResultText({ check: 'team/evil', result: 'busy', reason: `held by x${CLEAR}` })).not.toMatch(
      RAW_CONTROL,
    );
  });

  it("khrun tick's text lines", () => {
    const line = describeEntry({ check: 'team/evil', result: 'failed', error: `boom${CLEAR}` } as never, NOW);
    expect(line).not.toMatch(RAW_CONTROL);
  });
});

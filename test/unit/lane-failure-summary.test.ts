import { describe, expect, it } from 'vitest';
import { FailureSummary } from '../integration/setup/failure-summary.ts';

// The end of `npm test` repeats each failed lane's failure summary: a CI log kept only by its tail must
// still say which test failed and why (the one of a5cf1a6 showed only the unit lane's passing tail).
const E = '\u001b';
const laneOutput = [
  `${E}[32m✓${E}[39m test/integration/faults/control-plane.test.ts (5 tests) 213378ms`,
  '',
  `${E}[31m⎯⎯⎯⎯⎯⎯⎯${E}[39m${E}[1m${E}[41m Failed Tests 1 ${E}[49m${E}[22m${E}[31m⎯⎯⎯⎯⎯⎯⎯${E}[39m`,
  '',
  `${E}[41m${E}[1m FAIL ${E}[22m${E}[49m test/integration/kubelet.test.ts > process kubelet > registers a Ready node`,
  `${E}[31m${E}[1mAssertionError${E}[22m: expected 30918 to be less than 30000${E}[39m`,
  ` ❯ test/integration/kubelet.test.ts:91:69`,
  '',
  ` Test Files  1 failed | 29 passed (30)`,
  '      Tests  1 failed | 177 passed (178)',
];

describe("a lane's failure summary (test/integration/setup/failure-summary.ts)", () => {
  it('keeps the lines from the Failed Tests banner to the totals, without colours', () => {
    const summary = new FailureSummary();
    for (const line of laneOutput) summary.add(line);
    expect(summary.text()).toEqual([
      '⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯',
      '',
      ' FAIL  test/integration/kubelet.test.ts > process kubelet > registers a Ready node',
      'AssertionError: expected 30918 to be less than 30000',
      ' ❯ test/integration/kubelet.test.ts:91:69',
      '',
    ]);
  });

  it('is empty for a lane that passed', () => {
    const summary = new FailureSummary();
    for (const line of laneOutput.slice(0, 1).concat(laneOutput.slice(8))) summary.add(line);
    expect(summary.text()).toEqual([]);
  });

  it('keeps failed suites and unhandled errors too, and says how many lines it left out', () => {
    const summary = new FailureSummary(3);
    for (const line of [' Failed Suites 1 ', 'a', 'b', 'c', 'd', ' Test Files  1 failed', 'after'])
      summary.add(line);
    expect(summary.text()).toEqual([
      ' Failed Suites 1 ',
      'a',
      'b',
      "… 2 more lines above in the lane's output",
    ]);
  });
});

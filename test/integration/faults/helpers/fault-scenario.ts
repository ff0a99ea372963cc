import { onTestFailed, type TestContext } from 'vitest';
import { appendFaultLine, type FaultRow } from './fault-table.ts';

export interface FaultScenario {
  /** Appends the scenario's measured row now: call it before asserting anything the row reports. */
  record(row: FaultRow): Promise<void>;
}

let scenarios = 0;

/**
 * One scenario's place in the faults table. Made first thing in its test; the test measures, records its
 * row, then asserts: so a scenario that loses shows the loss in the table, then fails. When the test fails
 * (an assertion, an error, a timeout), a second line marks its row FAILED with the first error; a test
 * that failed before it recorded anything leaves a row that says so. A concurrent test passes its context
 * (Vitest tracks hooks of concurrent tests only through it).
 */
export function faultScenario(name: string, test?: TestContext): FaultScenario {
  const id = `${process.pid}-${++scenarios}`;
  const onFailed = test ? test.onTestFailed : onTestFailed;
  onFailed(async ({ task }) => {
    const error = task.result?.errors?.[0];
    const failed = (error?.message ?? 'failed').split('\n')[0] ?? 'failed';
    await appendFaultLine({ id, scenario: name, failed: failed.slice(0, 300) });
  });
  return { record: (row) => appendFaultLine({ ...row, id }) };
}

import { stripAnsi } from '../../../lib/commands/table.ts';

/**
 * What a lane's vitest printed about its failures, kept for the end of `npm test`: the three lanes' output
 * interleaves, and a CI that keeps only the tail of a long log must still show which tests failed and why.
 * Collects the lines from vitest's "Failed Tests" (or "Failed Suites", "Unhandled Errors") banner up to its
 * "Test Files" total, without terminal colours, at most `maxLines` of them.
 */
export class FailureSummary {
  private readonly lines: string[] = [];
  private collecting = false;
  private dropped = 0;

  constructor(private readonly maxLines = 80) {}

  /** One line of the lane's output (stdout or stderr). */
  add(line: string): void {
    const plain = stripAnsi(line);
    if (/^[⎯\s]*(Failed Tests|Failed Suites|Unhandled Errors?)\b/.test(plain)) this.collecting = true;
    else if (/^\s*Test Files\b/.test(plain)) this.collecting = false;
    if (!this.collecting) return;
    if (this.lines.length < this.maxLines) this.lines.push(plain);
    else this.dropped++;
  }

  /** The collected lines, and how many more there were; empty when the lane printed no failure. */
  text(): string[] {
    return this.dropped
      ? [...this.lines, `… ${this.dropped} more lines above in the lane's output`]
      : this.lines;
  }
}

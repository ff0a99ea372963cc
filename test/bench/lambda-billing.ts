/**
 * What AWS bills a Lambda invocation for (pure): its duration rounded up to the next millisecond, times the
 * configured memory in GB (memorySize MB / 1024). Since 2025-08-01 the init phase of a cold start is billed
 * the same way; warm invocations bill the handler's duration only.
 */
export function billedGbSeconds(durationMs: number, memoryMb: number): number {
  return (Math.ceil(durationMs) / 1000) * (memoryMb / 1024);
}

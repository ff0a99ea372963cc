// Loaded with `node --import` by the benchmark: prints the process's peak resident memory and the CPU it
// used (user + system, all its threads) on exit.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  const u = process.resourceUsage();
  const cpuMs = Math.round((u.userCPUTime + u.systemCPUTime) / 1000);
  writeSync(2, `\nKHRUN_BENCH_MAXRSS_KB ${u.maxRSS}\nKHRUN_BENCH_CPU_MS ${cpuMs}\n`);
});

// Loaded with `node --import` by the benchmark: prints the process's peak resident memory on exit.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  writeSync(2, `\nKHRUN_BENCH_MAXRSS_KB ${process.resourceUsage().maxRSS}\n`);
});

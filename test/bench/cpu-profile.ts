import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

// Where a process's CPU time went, from the V8 CPU profiles `node --cpu-prof` wrote (the fleet section
// writes the spawned tick's with KHRUN_BENCH_FLEET_PROFILE=1): `npx tsx test/bench/cpu-profile.ts DIR [N]`
// prints the N functions with the most self time and the most inclusive time, and the profile's wall time.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self and inclusive milliseconds per function (pure): sample time attributed to the sampled node and its callers. */
export function profileTimes(p: Profile): {
  wallMs: number;
  selfMs: Map<string, number>;
  totalMs: Map<string, number>;
} {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').at(-1) ?? ''}:${n.callFrame.lineNumber + 1}`;
  const selfMs = new Map<string, number>();
  const totalMs = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(id);
    if (!node) return;
    selfMs.set(name(node), (selfMs.get(name(node)) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at);
      if (!n) break;
      const key = name(n);
      if (seen.has(key)) continue;
      seen.add(key);
      totalMs.set(key, (totalMs.get(key) ?? 0) + ms);
    }
  });
  return { wallMs: (p.endTime - p.startTime) / 1000, selfMs, totalMs };
}

const top = (m: Map<string, number>, n: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);

const add = (into: Map<string, number>, from: Map<string, number>) => {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
};

if (process.argv[1]?.endsWith('cpu-profile.ts')) {
  const dir = process.argv[2] ?? '.khrun/bench-prof';
  const n = Number(process.argv[3] ?? 25);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  // Several profiles (a row's runners): their times added up.
  const sum = { wallMs: 0, selfMs: new Map<string, number>(), totalMs: new Map<string, number>() };
  for (const file of files) {
    const t = profileTimes(JSON.parse(await readFile(join(dir, file), 'utf8')) as Profile);
    sum.wallMs += t.wallMs;
    add(sum.selfMs, t.selfMs);
    add(sum.totalMs, t.totalMs);
  }
  process.stdout.write(
    `${files.length} profiles in ${dir}: ${sum.wallMs.toFixed(0)} ms of wall time in all\n  self:\n`,
  );
  for (const [k, v] of top(sum.selfMs, n)) process.stdout.write(`    ${v.toFixed(0).padStart(7)} ms  ${k}\n`);
  process.stdout.write('  inclusive:\n');
  for (const [k, v] of top(sum.totalMs, n))
    process.stdout.write(`    ${v.toFixed(0).padStart(7)} ms  ${k}\n`);
}

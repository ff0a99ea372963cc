import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  EXCLUSIVE,
  type ExclusiveReason,
  PARALLEL_DURATIONS_S,
  parallelStartOrder,
  projectOf,
  SERIAL_LANES,
} from '../integration/setup/lanes.ts';

// The rule of test/integration/setup/lanes.ts, checked on what each integration file does: a file that
// installs khrun cluster-wide or runs the real Kuberhealthy is EXCLUSIVE, for that reason, and runs in a
// serial lane: in the parallel lane it would share a cluster with other files at the same time.

const root = resolve(import.meta.dirname, '../..');

/** What makes a file EXCLUSIVE, found in its source; a file with both runs Kuberhealthy first of all. */
const MARKERS: Array<{ reason: ExclusiveReason; what: string; test: (source: string) => boolean }> = [
  {
    reason: 'kuberhealthy',
    what: 'the real Kuberhealthy v2 daemon or v3 controller',
    test: (s) => /\b(startKuberhealthyV2|startKuberhealthyV3|kuberhealthyV3ModuleDir)\(/.test(s),
  },
  { reason: 'deploy', what: 'applyDeploy (infra/deploy)', test: (s) => /\bapplyDeploy\(/.test(s) },
  {
    reason: 'deploy',
    what: 'helm install of the chart',
    test: (s) => /helm/i.test(s) && /^\s*'install',\s*$/m.test(s),
  },
];

/** Every .test.ts file under test/integration (the lanes' INTEGRATION_FILES). */
function integrationFiles(): string[] {
  return readdirSync(join(root, 'test/integration'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

describe('the integration lanes (test/integration/setup/lanes.ts)', () => {
  const serial = Object.values(SERIAL_LANES).flat();

  it('run every EXCLUSIVE file, and only those, in exactly one serial lane; every file listed exists', () => {
    for (const f of serial) expect(existsSync(join(root, f)), f).toBe(true);
    expect([...serial].sort()).toEqual(Object.keys(EXCLUSIVE).sort());
    expect(new Set(serial).size).toBe(serial.length);
  });

  it('make every file that installs khrun cluster-wide or runs Kuberhealthy EXCLUSIVE, for that reason', () => {
    const files = integrationFiles();
    expect(files.length).toBeGreaterThan(30);
    const misplaced: string[] = [];
    for (const file of files) {
      const found = MARKERS.find((m) => m.test(readFileSync(join(root, file), 'utf8')));
      if (found && EXCLUSIVE[file] !== found.reason)
        misplaced.push(
          `${file}: ${found.what}: EXCLUSIVE '${found.reason}', not ${EXCLUSIVE[file] ?? 'PARALLEL'}`,
        );
    }
    expect(misplaced).toEqual([]);
  });

  it('finds the markers it looks for (a check that cannot fail proves nothing)', () => {
    const reasonOf = (f: string) =>
      MARKERS.find((m) => m.test(readFileSync(join(root, 'test/integration', f), 'utf8')))?.reason;
    expect(reasonOf('tick.test.ts')).toBe('deploy');
    expect(reasonOf('helm.test.ts')).toBe('deploy');
    expect(reasonOf('takeover.test.ts')).toBe('kuberhealthy');
    expect(reasonOf('beside-kuberhealthy.test.ts')).toBe('kuberhealthy');
    expect(reasonOf('crds.test.ts')).toBeUndefined();
    expect(reasonOf('release.test.ts')).toBeUndefined();
  });

  it('time only PARALLEL files, every one of them, and start them longest first, unmeasured ones before', () => {
    const parallel = integrationFiles().filter((f) => !(f in EXCLUSIVE));
    expect(Object.keys(PARALLEL_DURATIONS_S).sort()).toEqual(parallel);
    const ordered = parallelStartOrder(
      [
        'test/integration/crds.test.ts',
        'test/integration/new.test.ts',
        'test/integration/faults/exit-grace.test.ts',
      ],
      (f) => f,
    );
    expect(ordered).toEqual([
      'test/integration/new.test.ts',
      'test/integration/faults/exit-grace.test.ts',
      'test/integration/crds.test.ts',
    ]);
    const all = parallelStartOrder(parallel, (f) => f).map((f) => PARALLEL_DURATIONS_S[f] ?? 0);
    expect(all).toEqual([...all].sort((a, b) => b - a));
  });
});

describe('projectOf: the vitest project that runs a file (npm run compat runs its files by it)', () => {
  it('names the serial lane of an EXCLUSIVE file and the parallel lane for any other', () => {
    expect(projectOf('test/integration/compat/v2-checks.test.ts')).toBe('integration-serial-2');
    expect(projectOf('test/integration/deploy.test.ts')).toBe('integration-serial-1');
    expect(projectOf('test/integration/faults/report-secret.test.ts')).toBe('integration');
  });
});

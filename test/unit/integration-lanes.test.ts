import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEPLOY_LANE, KUBERHEALTHY_LANE } from '../integration/setup/lanes.ts';

// The rule of test/integration/setup/lanes.ts, checked on what each integration file does: a file that
// installs khrun cluster-wide or runs the real Kuberhealthy must not land in the parallel lane, where it
// would share a cluster with other files at the same time.

const root = resolve(import.meta.dirname, '../..');

/** What puts a file in a one-at-a-time lane, found in its source. */
const MARKERS = {
  deploy: [
    { what: 'applyDeploy (infra/deploy)', test: (s: string) => /\bapplyDeploy\(/.test(s) },
    {
      what: 'helm install of the chart',
      test: (s: string) => /helm/i.test(s) && /^\s*'install',\s*$/m.test(s),
    },
  ],
  kuberhealthy: [
    {
      what: 'the real Kuberhealthy v2 daemon or v3 controller',
      test: (s: string) => /\b(startKuberhealthyV2|startKuberhealthyV3|kuberhealthyV3ModuleDir)\(/.test(s),
    },
  ],
};

/** Every .test.ts file under test/integration (the lanes' INTEGRATION_FILES). */
function integrationFiles(): string[] {
  return readdirSync(join(root, 'test/integration'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

describe('the integration lanes (test/integration/setup/lanes.ts)', () => {
  it('list files that exist, each in one lane', () => {
    for (const f of [...DEPLOY_LANE, ...KUBERHEALTHY_LANE]) expect(existsSync(join(root, f)), f).toBe(true);
    expect(DEPLOY_LANE.filter((f) => KUBERHEALTHY_LANE.includes(f))).toEqual([]);
  });

  it('hold every file that installs khrun cluster-wide or runs Kuberhealthy in a one-at-a-time lane', () => {
    const files = integrationFiles();
    expect(files.length).toBeGreaterThan(30);
    const misplaced: string[] = [];
    for (const file of files) {
      const source = readFileSync(join(root, file), 'utf8');
      const kuberhealthy = MARKERS.kuberhealthy.filter((m) => m.test(source));
      const deploy = MARKERS.deploy.filter((m) => m.test(source));
      // A file that does both runs Kuberhealthy: its lane's cluster has no other file's checks meanwhile.
      if (kuberhealthy.length && !KUBERHEALTHY_LANE.includes(file))
        misplaced.push(`${file}: ${kuberhealthy[0]!.what} → KUBERHEALTHY_LANE`);
      else if (!kuberhealthy.length && deploy.length && !DEPLOY_LANE.includes(file))
        misplaced.push(`${file}: ${deploy[0]!.what} → DEPLOY_LANE`);
    }
    expect(misplaced).toEqual([]);
  });

  it('finds the markers it looks for (a check that cannot fail proves nothing)', () => {
    const read = (f: string) => readFileSync(join(root, f), 'utf8');
    expect(MARKERS.deploy[0]!.test(read('test/integration/tick.test.ts'))).toBe(true);
    expect(MARKERS.deploy[1]!.test(read('test/integration/helm.test.ts'))).toBe(true);
    expect(MARKERS.kuberhealthy[0]!.test(read('test/integration/takeover.test.ts'))).toBe(true);
    expect(MARKERS.deploy.some((m) => m.test(read('test/integration/crds.test.ts')))).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { filesReplacingModules, REPLACES_A_MODULE } from './setup/isolation.ts';

describe('which unit files need a process of their own', () => {
  // Written as `vi.${name}(` so that this file's own source does not replace a module.
  const call = (name: string, args: string) => `vi.${name}(${args});`;

  it('a file that replaces a module (mock, doMock), not one that reads a mock (mocked) or spies', () => {
    expect(REPLACES_A_MODULE.test(call('mock', "'node:crypto', async () => ({})"))).toBe(true);
    expect(REPLACES_A_MODULE.test(`  ${call('doMock', "'../../lib/x.ts'")}`)).toBe(true);
    expect(REPLACES_A_MODULE.test(`const compare = ${call('mocked', 'timingSafeEqual')}`)).toBe(false);
    expect(REPLACES_A_MODULE.test(call('spyOn', "console, 'warn'"))).toBe(false);
  });

  it("finds this repository's, and only test files", () => {
    const found = filesReplacingModules(process.cwd(), ['test/unit', 'infra/devkit/test']);
    expect(found).toEqual(
      expect.arrayContaining(['test/unit/report-fuzz.test.ts', 'test/unit/trigger-gate.test.ts']),
    );
    expect(found).not.toContain('test/unit/unit-isolation.test.ts');
    expect(found.every((path) => path.endsWith('.test.ts'))).toBe(true);
  });
});

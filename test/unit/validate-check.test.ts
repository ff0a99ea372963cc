import { describe, expect, it } from 'vitest';
import { validateCheck } from '../../lib/check/validate-check.ts';
import type { KhCheck } from '../../lib/state/resources.ts';

function khcheck(spec: Partial<Record<keyof KhCheck['spec'], unknown>> = {}): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: 'dns-internal', namespace: 'kuberhealthy', uid: 'uid-1' },
    spec: {
      runInterval: '2m',
      timeout: '15m',
      podSpec: { containers: [{ name: 'main', image: 'kuberhealthy/dns-resolution-check:v1.5.0' }] },
      ...spec,
    } as KhCheck['spec'],
  };
}

describe('validateCheck', () => {
  it('resolves a valid check, keeping the source object', () => {
    const source = khcheck();
    expect(validateCheck(source)).toEqual({
      ok: true,
      check: {
        name: 'dns-internal',
        namespace: 'kuberhealthy',
        uid: 'uid-1',
        timeoutMs: 900_000,
        runIntervalMs: 120_000,
        source,
      },
    });
    const result = validateCheck(source);
    expect(result.ok && result.check.source).toBe(source);
  });

  it.each([
    ['timeout', '', 'timeoutMs', 300_000],
    ['timeout', undefined, 'timeoutMs', 300_000],
    ['timeout', null, 'timeoutMs', 300_000],
    ['runInterval', '', 'runIntervalMs', 600_000],
    ['runInterval', undefined, 'runIntervalMs', 600_000],
    ['timeout', '1.5h', 'timeoutMs', 5_400_000],
    ['timeout', '1500us', 'timeoutMs', 1.5],
    ['runInterval', '30s', 'runIntervalMs', 30_000],
  ] as const)('spec.%s %j gives %s %d', (field, value, key, ms) => {
    const result = validateCheck(khcheck({ [field]: value }));
    expect(result.ok && result.check[key]).toBe(ms);
  });

  it.each([
    [
      'timeout',
      '5 min',
      'spec.timeout "5 min" is not a Go duration (time: unknown unit " min" in duration "5 min"); use a value such as "5m" or "90s"',
    ],
    [
      'timeout',
      '10',
      'spec.timeout "10" is not a Go duration (time: missing unit in duration "10"); use a value such as "5m" or "90s"',
    ],
    [
      'runInterval',
      '1d',
      'spec.runInterval "1d" is not a Go duration (time: unknown unit "d" in duration "1d"); use a value such as "10m" or "1h"',
    ],
    ['timeout', '0', 'spec.timeout "0" must be greater than zero; use a value such as "5m" or "90s"'],
    ['timeout', '0s', 'spec.timeout "0s" must be greater than zero; use a value such as "5m" or "90s"'],
    [
      'runInterval',
      '-1m',
      'spec.runInterval "-1m" must be greater than zero; use a value such as "10m" or "1h"',
    ],
    [
      'timeout',
      300,
      'spec.timeout must be a string holding a Go duration, got number 300; use a value such as "5m" or "90s"',
    ],
  ])('rejects spec.%s %j', (field, value, reason) => {
    expect(validateCheck(khcheck({ [field]: value }))).toEqual({ ok: false, reason });
  });

  const noContainers = 'no containers found in checks PodSpec';
  it.each([
    ['missing podSpec', undefined, noContainers],
    ['null podSpec', null, noContainers],
    ['no containers key', {}, noContainers],
    ['empty containers', { containers: [] }, noContainers],
    ['only init containers', { containers: [], initContainers: [{ name: 'i', image: 'x' }] }, noContainers],
    [
      'a container without image',
      { containers: [{ name: 'ok', image: 'x' }, { name: 'second' }] },
      "no image found in check's PodSpec for container second.",
    ],
    [
      'a container with an empty image',
      { containers: [{ name: 'main', image: '' }] },
      "no image found in check's PodSpec for container main.",
    ],
    [
      'an init container without image',
      { containers: [{ name: 'main', image: 'x' }], initContainers: [{ name: 'setup' }] },
      "no image found in check's PodSpec for container setup.",
    ],
  ])('rejects %s', (_label, podSpec, reason) => {
    expect(validateCheck(khcheck({ podSpec }))).toEqual({ ok: false, reason });
  });

  it.each([
    ['extraLabels', { team: 'platform' }, true],
    ['extraLabels', null, true],
    ['extraLabels', { replicas: 3 }, false],
    ['extraLabels', 'team=platform', false],
    ['extraAnnotations', ['a'], false],
    ['extraAnnotations', { 'example.com/owner': 'me' }, true],
  ])('spec.%s %j valid: %s', (field, value, valid) => {
    const result = validateCheck(khcheck({ [field]: value }));
    expect(result.ok).toBe(valid);
    if (!result.ok) expect(result.reason).toContain(`spec.${field} must be a map`);
  });

  it.each([
    ['name', { name: '', namespace: 'ns', uid: 'u' }],
    ['namespace', { name: 'n', namespace: '', uid: 'u' }],
    ['uid', { name: 'n', namespace: 'ns' }],
  ])('rejects a check without metadata.%s', (field, metadata) => {
    const result = validateCheck({ ...khcheck(), metadata });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain(`metadata.${field}`);
  });

  it('does not modify its input', () => {
    const source = khcheck({ timeout: '', runInterval: '' });
    const before = structuredClone(source);
    validateCheck(source);
    expect(source).toEqual(before);
  });
});

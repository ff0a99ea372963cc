import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { healthCheckStatusView, readHealthCheckStatus } from '../../lib/healthcheck/status-view.ts';
import { validateHealthCheck } from '../../lib/healthcheck/validate.ts';

function hc(spec: Partial<HealthCheck['spec']> = {}, status?: HealthCheck['status']): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: 'web', namespace: 'ns', uid: 'u-1' },
    spec: { podSpec: { spec: { containers: [{ name: 'c', image: 'img' }] } }, ...spec },
    status,
  };
}

describe('validateHealthCheck', () => {
  it("takes v3's defaults: timeout 30s, runInterval 10m", () => {
    const v = validateHealthCheck(hc());
    expect(v.ok && [v.check.timeoutMs, v.check.runIntervalMs]).toEqual([30_000, 600_000]);
  });

  it('reads Go duration strings, and a zero timeout falls back as v3 does', () => {
    const v = validateHealthCheck(hc({ timeout: '1m30s', runInterval: '2h' }));
    expect(v.ok && [v.check.timeoutMs, v.check.runIntervalMs]).toEqual([90_000, 7_200_000]);
    const zero = validateHealthCheck(hc({ timeout: '0s' }));
    expect(zero.ok && zero.check.timeoutMs).toBe(30_000);
  });

  it('refuses an unparsable duration and a runInterval that is not positive, saying what to write', () => {
    const bad = validateHealthCheck(hc({ timeout: '5 minutes' }));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toMatch(/spec.timeout "5 minutes" is not a Go duration.*"30s"/);
    const zero = validateHealthCheck(hc({ runInterval: '0s' }));
    expect(!zero.ok && zero.reason).toMatch(/spec.runInterval "0s" must be greater than zero/);
  });

  it('refuses a v2-shaped podSpec (containers directly under podSpec)', () => {
    const v2Shaped = hc({ podSpec: { containers: [{ name: 'c', image: 'i' }] } as never });
    const v = validateHealthCheck(v2Shaped);
    expect(!v.ok && v.reason).toMatch(/spec.podSpec.spec is missing/);
  });

  it('merges podSpec.metadata under the extras into the khcheck view, as v3 applies them', () => {
    const v = validateHealthCheck(
      hc({
        extraLabels: { team: 'b' },
        podSpec: {
          metadata: { labels: { team: 'a', tier: 'x' } },
          spec: { containers: [{ name: 'c', image: 'i' }] },
        },
      }),
    );
    expect(v.ok && v.check.check.source.spec.extraLabels).toEqual({ team: 'b', tier: 'x' });
    expect(v.ok && v.check.check.source.kind).toBe('HealthCheck');
  });

  it('refuses a container without an image, in the khcheck words', () => {
    const v = validateHealthCheck(hc({ podSpec: { spec: { containers: [{ name: 'c' }] } } }));
    expect(!v.ok && v.reason).toMatch(/no image found/);
  });
});

describe('healthCheckStatusView', () => {
  it('a never-run check: idle, not run, not ok', () => {
    const view = healthCheckStatusView(hc());
    expect(view).toMatchObject({ ok: false, running: false, hasRun: false, errors: [], successCount: 0 });
  });

  it('reads the fields v3 writes, runDuration from nanoseconds', () => {
    const view = healthCheckStatusView(
      hc(
        {},
        {
          ok: false,
          errors: ['boom'],
          currentUUID: 'r-2',
          lastRunUnix: 1_700_000_000,
          runDuration: 2_500_000_000,
          successCount: 3,
          failureCount: 1,
          lastOKUnix: 1_699_999_000,
          lastFailureUnix: 1_700_000_005,
        },
      ),
    );
    expect(view).toMatchObject({
      ok: false,
      errors: ['boom'],
      currentUuid: 'r-2',
      running: true,
      hasRun: true,
      lastRunMs: 1_700_000_000_000,
      runDurationMs: 2500,
      successCount: 3,
      failureCount: 1,
      lastOkMs: 1_699_999_000_000,
      podNamespace: 'ns',
    });
  });

  it('reads a hand-damaged status as zero values, never as trusted garbage', () => {
    const s = readHealthCheckStatus(hc({}, { ok: 'yes', errors: [1, 'e'], currentUUID: 7 } as never));
    expect([s.ok, s.errors, s.currentUUID]).toEqual([false, ['e'], '']);
  });
});

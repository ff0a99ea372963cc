import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { handbackOptions, takeOverSetting, takeoverOptions } from '../../lib/config/takeover-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

describe('takeover options', () => {
  it('--take-over or KHRUN_TAKE_OVER turn the refusal off; a bad value is a clear error', () => {
    expect(takeOverSetting({ flags: {}, env: {} })).toBe(false);
    expect(takeOverSetting({ flags: { 'take-over': true }, env: {} })).toBe(true);
    expect(takeOverSetting({ flags: {}, env: { KHRUN_TAKE_OVER: 'true' } })).toBe(true);
    expect(() => takeOverSetting({ flags: {}, env: { KHRUN_TAKE_OVER: 'sure' } })).toThrow(
      /KHRUN_TAKE_OVER.*true or false/s,
    );
  });

  it('names the Deployment as NAMESPACE/NAME, or NAME with -n; -n alone narrows the search', () => {
    const file = kubeconfigFile();
    const env = { KUBECONFIG: file.path };
    expect(takeoverOptions({ flags: { from: 'kh/kuberhealthy' }, env }).from).toBe('kh/kuberhealthy');
    expect(takeoverOptions({ flags: { from: 'kuberhealthy', namespace: 'kh' }, env }).from).toBe(
      'kh/kuberhealthy',
    );
    expect(takeoverOptions({ flags: { namespace: 'kh' }, env })).toMatchObject({ namespace: 'kh' });
    expect(() => takeoverOptions({ flags: { from: 'kuberhealthy' }, env })).toThrow(
      /--from.*without a namespace/s,
    );
    expect(() => takeoverOptions({ flags: { from: 'a/b', namespace: 'c' }, env })).toThrow(/outside -n c/);
    expect(() => takeoverOptions({ flags: { 'all-namespaces': true }, env })).toThrow(ConfigError);
    expect(handbackOptions({ flags: { to: 'kh/kuberhealthy', replicas: '3' }, env })).toMatchObject({
      to: 'kh/kuberhealthy',
      replicas: 3,
    });
    expect(() => handbackOptions({ flags: { replicas: '0' }, env })).toThrow(/--replicas/);
    file.remove();
  });
});

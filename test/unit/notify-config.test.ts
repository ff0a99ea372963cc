import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { notifyConfig } from '../../lib/config/notify-options.ts';
import { parseNotifyConfig } from '../../lib/notify/config.ts';
import { policySource } from '../../lib/notify/policy-source.ts';

const silent = { info() {}, warn() {}, error() {}, debug() {} };
const files: Record<string, string> = {
  '/s/pd-key': 'R0123456789abcdef0123456789abcde\n',
  '/s/url': 'https://hooks.example.com/x\n',
};
const readFile = (path: string) => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error('nope'), { code: 'ENOENT' });
  return text;
};
const input = (env: Record<string, string>) => ({ flags: {}, env });

const DOC = `
statusPageUrl: https://status.example.com/
defaults:
  channels: [am]
  failure-threshold: 2
channels:
  am: { type: alertmanager, url: "http://am:9093" }
  pd: { type: pagerduty, routingKeyFile: /s/pd-key, timeoutSeconds: 3 }
  slack: { type: slack, urlFile: /s/url, namespaces: [team-a] }
  hook: { type: webhook, url: "https://ops.example.com/hook", secret: "0123456789abcdef0123" }
`;

describe('the notification configuration', () => {
  it('reads channels, their secrets from files, the defaults and the bounds', () => {
    const c = parseNotifyConfig(DOC, readFile);
    expect([...c.channels.keys()]).toEqual(['am', 'pd', 'slack', 'hook']);
    expect(c.channels.get('pd')).toMatchObject({
      url: 'https://events.pagerduty.com/v2/enqueue',
      routingKey: 'R0123456789abcdef0123456789abcde',
      timeoutMs: 3000,
    });
    expect(c.channels.get('slack')).toMatchObject({
      url: 'https://hooks.example.com/x',
      namespaces: ['team-a'],
    });
    expect(c.defaults).toEqual({ channels: ['am'], failureThreshold: 2 });
    expect(c).toMatchObject({
      namespaceDefaults: false,
      maxDeliveries: 20,
      statusPageUrl: 'https://status.example.com/',
    });
  });

  it.each([
    [
      'channels: {x: {type: sms, url: "http://a"}}',
      'channels.x.type is "sms": write one of alertmanager, webhook, slack, pagerduty, teams',
    ],
    [
      'channels: {x: {type: slack}}',
      'channels.x.url is missing: give url, or urlFile (a mounted Secret key)',
    ],
    ['channels: {x: {type: slack, urlFile: /nope}}', 'channels.x.urlFile (/nope) cannot be read (ENOENT)'],
    ['channels: {x: {type: slack, url: "ftp://a"}}', 'channels.x.url is a ftp: URL'],
    [
      'channels: {x: {type: pagerduty, routingKey: short}}',
      'channels.x.routingKey is 5 characters, not the 32 of an integration key',
    ],
    [
      'channels: {x: {type: webhook, url: "http://a", secret: abc}}',
      'channels.x.secret is shorter than 16 characters',
    ],
    [
      'channels: {x: {type: slack, url: "http://a", token: t}}',
      'channels.x.token is not a setting of a slack channel',
    ],
    [
      'defaults: {failure-threshold: 0}',
      'defaults.failure-threshold is "0": write a whole number from 1 to 1000',
    ],
    ['defaults: {channels: ghost}', 'defaults.channels names ghost, which channels: does not define'],
    ['retries: 3', 'retries is not a setting'],
  ])('refuses %s, naming the key', (doc, message) => {
    expect(() => parseNotifyConfig(doc, readFile)).toThrow(message);
  });

  it('never puts a secret in a message', () => {
    expect(() =>
      parseNotifyConfig('channels: {x: {type: slack, url: "not a url secret-token-123"}}', readFile),
    ).toThrow(/^(?!.*secret-token-123)/);
  });

  it('comes from one of its variables; two at once, or SSM outside a Lambda, are configuration errors', () => {
    expect(notifyConfig(input({}), undefined, readFile)).toBeUndefined();
    expect(notifyConfig(input({ KHRUN_NOTIFY_CONFIG: DOC }), undefined, readFile)?.channels.size).toBe(4);
    files['/s/notify.yaml'] = DOC;
    expect(
      notifyConfig(input({ KHRUN_NOTIFY_CONFIG_FILE: '/s/notify.yaml' }), undefined, readFile)?.channels.size,
    ).toBe(4);
    expect(() =>
      notifyConfig(input({ KHRUN_NOTIFY_CONFIG: DOC, KHRUN_NOTIFY_CONFIG_FILE: '/s/notify.yaml' })),
    ).toThrow(ConfigError);
    expect(() => notifyConfig(input({ KHRUN_NOTIFY_CONFIG_PARAMETER: '/khrun/notify' }))).toThrow(
      'is read only by the runCheck and tick Lambda functions',
    );
    const fromSsm = notifyConfig(
      input({ KHRUN_NOTIFY_CONFIG_PARAMETER: '/khrun/notify' }),
      { parameter: '/khrun/notify', text: DOC },
      readFile,
    );
    expect(fromSsm?.channels.size).toBe(4);
    expect(() =>
      notifyConfig(input({ KHRUN_NOTIFY_CONFIG: 'channels: {x: {type: slack}}' }), undefined, readFile),
    ).toThrow('channels.x.url in KHRUN_NOTIFY_CONFIG: is missing');
  });
});

describe('the policy layers', () => {
  const config = parseNotifyConfig(DOC, readFile);
  const subject = (annotations: Record<string, string>, namespace = 'team-a') => ({
    kind: 'healthcheck' as const,
    namespace,
    name: 'web',
    annotations,
  });

  it('takes each key from the highest layer that sets it: check, namespace, cluster, built-in', async () => {
    let reads = 0;
    const source = policySource(
      { ...config, namespaceDefaults: true },
      {
        log: silent,
        readDefaults: async () => {
          reads++;
          return { 'success-threshold': '2', reminder: '4h', channels: 'pd' };
        },
      },
    );
    const r = await source.resolve(
      subject({ 'notify.khrun.dev/channels': 'slack,hook', 'notify.khrun.dev/severity': 'warning' }),
    );
    expect(r).toEqual({
      policy: {
        channels: ['slack', 'hook'],
        failureThreshold: 2,
        successThreshold: 2,
        sendResolved: true,
        reminderMs: 4 * 3600_000,
        severity: 'warning',
        silence: null,
        maintenance: [],
        afterSilence: 'notify',
        dependsOn: [],
        flapping: null,
      },
      problems: [],
    });
    await source.resolve(subject({}));
    expect(reads).toBe(1);
  });

  it('reports a bad value or channel, naming where it is and what to write, and goes on without it', async () => {
    const source = policySource(config, { log: silent });
    const r = await source.resolve(
      subject(
        {
          'notify.khrun.dev/failure-threshold': 'three',
          'notify.khrun.dev/channels': 'slack,ghost',
          'notify.khrun.dev/colour': 'red',
        },
        'team-b',
      ),
    );
    expect(r.policy).toMatchObject({ failureThreshold: 2, channels: [] });
    expect(r.problems).toEqual([
      'annotation notify.khrun.dev/failure-threshold on HealthCheck team-b/web is "three": write a whole number from 1 to 1000, e.g. "3"',
      'annotation notify.khrun.dev/colour on HealthCheck team-b/web is "red": write one of the keys channels, failure-threshold, success-threshold, send-resolved, reminder, severity, silence, maintenance, after-silence, depends-on, flapping',
      'channel slack of HealthCheck team-b/web is named, which is not allowed in namespace team-b (its namespaces: team-a): it is left out',
      'channel ghost of HealthCheck team-b/web is named, which the notification configuration does not define (defined: am, pd, slack, hook): it is left out',
    ]);
  });

  it('a namespace defaults ConfigMap it may not read is a problem, not a failure', async () => {
    const source = policySource(
      { ...config, namespaceDefaults: true },
      {
        log: silent,
        readDefaults: async () => Promise.reject(Object.assign(new Error('forbidden'), { statusCode: 403 })),
      },
    );
    const r = await source.resolve(subject({}));
    expect(r.policy.failureThreshold).toBe(2);
    expect(r.problems[0]).toContain(
      'ConfigMap team-a/khrun-notifications cannot be read (forbidden): grant the runner get on it',
    );
  });
});

describe('the Lambda functions read the configuration from SSM', () => {
  it('reads the parameter KHRUN_NOTIFY_CONFIG_PARAMETER names, and fails naming it when it cannot', async () => {
    const { notifyConfigFromParameter } = await import('../../lib/aws/notify-parameter.ts');
    expect(await notifyConfigFromParameter({}, async () => 'x')).toBeUndefined();
    const read = async (name: string) =>
      name === '/khrun/notify'
        ? DOC
        : Promise.reject(Object.assign(new Error('no'), { name: 'ParameterNotFound' }));
    expect(await notifyConfigFromParameter({ KHRUN_NOTIFY_CONFIG_PARAMETER: '/khrun/notify' }, read)).toEqual(
      {
        parameter: '/khrun/notify',
        text: DOC,
      },
    );
    await expect(
      notifyConfigFromParameter({ KHRUN_NOTIFY_CONFIG_PARAMETER: '/other' }, read),
    ).rejects.toThrow(
      'KHRUN_NOTIFY_CONFIG_PARAMETER="/other": the notification configuration cannot be read from SSM (ParameterNotFound)',
    );
  });
});

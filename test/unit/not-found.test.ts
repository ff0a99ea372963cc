import { describe, expect, it } from 'vitest';
import { type NotFoundData, NotFoundError } from '../../lib/core/not-found.ts';
import { HealthCheckNotFoundError } from '../../lib/healthcheck/not-found.ts';
import { JobNotFoundError } from '../../lib/job/run-khjob.ts';
import { CheckNotFoundError } from '../../lib/run/errors.ts';

describe('the not-found family', () => {
  it.each<[NotFoundError, string, NotFoundData, RegExp]>([
    [
      new CheckNotFoundError('ns', 'web'),
      'CheckNotFoundError',
      { resource: 'khcheck', namespace: 'ns', name: 'web' },
      /^khcheck ns\/web not found; .*kubectl get khchecks -A.*--check NAME --namespace NS$/,
    ],
    [
      new JobNotFoundError('ns', 'once'),
      'JobNotFoundError',
      { resource: 'khjob', namespace: 'ns', name: 'once' },
      /^khjob ns\/once not found; .*kubectl get khjobs -A.*--job NAME --namespace NS$/,
    ],
    [
      new HealthCheckNotFoundError('ns', 'hc'),
      'HealthCheckNotFoundError',
      { resource: 'HealthCheck', namespace: 'ns', name: 'hc' },
      /^HealthCheck ns\/hc not found; .*kubectl get healthchecks -A.*--healthcheck NAME --namespace NS$/,
    ],
    [
      new NotFoundError({ resource: 'khstate', namespace: 'ns', name: 'web' }),
      'NotFoundError',
      { resource: 'khstate', namespace: 'ns', name: 'web' },
      /^khstate ns\/web not found$/,
    ],
  ])('%s', (error, name, data, message) => {
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.data).toEqual(data);
    expect(error.message).toMatch(message);
  });

  it('a HealthCheck not found is a check not found (the trigger and the batch treat both alike)', () => {
    expect(new HealthCheckNotFoundError('ns', 'hc')).toBeInstanceOf(CheckNotFoundError);
    expect(new JobNotFoundError('ns', 'j')).not.toBeInstanceOf(CheckNotFoundError);
  });

  it('keeps the cause', () => {
    const cause = new CheckNotFoundError('ns', 'hc');
    expect(new HealthCheckNotFoundError('ns', 'hc', { cause }).cause).toBe(cause);
  });
});

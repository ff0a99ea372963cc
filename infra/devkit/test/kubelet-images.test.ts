import { describe, expect, it } from 'vitest';
import { checkImage, parseImageReference } from '../src/local/kubelet/images.ts';

describe('image conventions of the process kubelet', () => {
  it.each([
    'busybox',
    'busybox:1.36',
    'docker.io/library/busybox:latest',
    'localhost:5000/team/app:v1.2.3-rc.1',
    'Registry.Example.com/app',
    `app@sha256:${'a'.repeat(64)}`,
    `ghcr.io/org/app:1@sha256:${'b'.repeat(64)}`,
  ])('%s is present', (image) => {
    const check = checkImage(image);
    expect(check.kind).toBe('present');
  });

  it.each(['', 'Busybox', 'my app', 'app:', 'app:-tag', 'app@sha256:short', '/leading', 'library/UPPER:1'])(
    '%j is an invalid reference (InvalidImageName)',
    (image) => {
      const check = checkImage(image);
      expect(check.kind).toBe('invalid');
    },
  );

  it.each([
    'khrun.invalid/unpullable',
    'khrun.invalid/unpullable/app:1',
    'busybox:unpullable',
    'x/y:unpullable',
  ])('%s cannot be pulled (ErrImagePull, then ImagePullBackOff)', (image) => {
    const check = checkImage(image);
    expect(check.kind).toBe('unpullable');
    if (check.kind === 'unpullable') expect(check.message).toContain('khrun process kubelet');
  });

  it('gives a stable imageID per reference, named after the repository', () => {
    const a = checkImage('busybox:1.36');
    const b = checkImage('busybox:1.36');
    const c = checkImage('busybox:1.37');
    expect(a).toEqual(b);
    expect(a.kind === 'present' && a.imageID).toMatch(/^busybox@sha256:[0-9a-f]{64}$/);
    expect(c).not.toEqual(a);
  });

  it('parses name, tag and digest', () => {
    expect(parseImageReference('localhost:5000/a/b:t')).toEqual({
      name: 'localhost:5000/a/b',
      tag: 't',
      digest: undefined,
    });
  });
});

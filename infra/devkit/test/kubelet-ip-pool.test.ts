import { describe, expect, it } from 'vitest';
import { IpPool, ipToNumber, numberToIp } from '../src/local/kubelet/ip-pool.ts';

describe('IpPool', () => {
  it('hands out addresses from the first one upward, a released one only after the rest of the range', () => {
    const pool = new IpPool({ first: '10.213.1.1', last: '10.213.1.5' });
    expect([pool.allocate(), pool.allocate(), pool.allocate()]).toEqual([
      '10.213.1.1',
      '10.213.1.2',
      '10.213.1.3',
    ]);
    pool.release('10.213.1.2');
    // Not at once: a new pod never takes the address of a pod that has just ended.
    expect(pool.allocate()).toBe('10.213.1.4');
    expect(pool.allocate()).toBe('10.213.1.5');
    // The range wraps: the released address is the only free one left.
    expect(pool.allocate()).toBe('10.213.1.2');
    expect(() => pool.allocate()).toThrow(/no free pod IP address/);
  });

  it('skips .0 and .255 when crossing a /24', () => {
    const pool = new IpPool({ first: '10.213.1.253', last: '10.213.2.2' });
    expect([pool.allocate(), pool.allocate(), pool.allocate()]).toEqual([
      '10.213.1.253',
      '10.213.1.254',
      '10.213.2.1',
    ]);
  });

  it('gives a pod its previous address when free and in range, else the next free one', () => {
    const pool = new IpPool({ first: '10.213.1.1', last: '10.213.1.9' });
    expect(pool.allocate('10.213.1.5')).toBe('10.213.1.5');
    expect(pool.allocate('10.213.1.5')).toBe('10.213.1.1');
    expect(pool.allocate('10.99.0.1')).toBe('10.213.1.2');
    expect(pool.allocate('garbage')).toBe('10.213.1.3');
  });

  it('fails clearly when the range is exhausted', () => {
    const pool = new IpPool({ first: '10.213.1.1', last: '10.213.1.2' });
    pool.allocate();
    pool.allocate();
    expect(() => pool.allocate()).toThrow(/no free pod IP address/);
  });

  it('converts addresses both ways', () => {
    expect(numberToIp(ipToNumber('255.1.2.3'))).toBe('255.1.2.3');
    expect(() => ipToNumber('1.2.3')).toThrow();
  });
});

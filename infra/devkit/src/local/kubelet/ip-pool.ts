/** An inclusive range of IPv4 pod addresses, e.g. 10.213.1.1 to 10.213.254.254. */
export interface IpRange {
  first: string;
  last: string;
}

/** The default pod range: 10.213.<1..254>.<1..254>, inside the bridge's 10.213.0.0/16. */
export const DEFAULT_POD_IP_RANGE: IpRange = { first: '10.213.1.1', last: '10.213.254.254' };

export function ipToNumber(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return (((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!) >>> 0;
}

export function numberToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/**
 * Hands out the next free address after the last one handed out, wrapping at the end of the range, as
 * CNI's host-local IPAM does: a released address is reused only once the rest of the range has been
 * used, so a new pod does not take the address of one whose end the API server has not seen yet (a
 * report identified by its source address would be taken for that pod's). Skips the .0 and .255 of each
 * /24 (so no address looks like a network or broadcast address). Not thread-safe across processes: two
 * kubelets on one machine need disjoint ranges.
 */
export class IpPool {
  private readonly first: number;
  private readonly last: number;
  private readonly used = new Set<number>();
  /** The address handed out last (first - 1 before any). */
  private lastHanded: number;

  constructor(range: IpRange = DEFAULT_POD_IP_RANGE) {
    this.first = ipToNumber(range.first);
    this.last = ipToNumber(range.last);
    if (this.first > this.last) throw new Error(`empty pod IP range ${range.first}-${range.last}`);
    this.lastHanded = this.first - 1;
  }

  /** Takes `preferred` when it is in range and free (a pod keeps its address), else the next free one. */
  allocate(preferred?: string): string {
    if (preferred) {
      const n = safeToNumber(preferred);
      if (n !== undefined && this.usable(n) && !this.used.has(n)) {
        this.used.add(n);
        return preferred;
      }
    }
    const span = this.last - this.first + 1;
    for (let i = 1; i <= span; i++) {
      const n = this.first + ((this.lastHanded - this.first + i) % span);
      if (this.usable(n) && !this.used.has(n)) {
        this.used.add(n);
        this.lastHanded = n;
        return numberToIp(n);
      }
    }
    throw new Error(`no free pod IP address left in ${numberToIp(this.first)}-${numberToIp(this.last)}`);
  }

  release(ip: string): void {
    const n = safeToNumber(ip);
    if (n !== undefined) this.used.delete(n);
  }

  get size(): number {
    return this.used.size;
  }

  private usable(n: number): boolean {
    const low = n & 255;
    return n >= this.first && n <= this.last && low !== 0 && low !== 255;
  }
}

function safeToNumber(ip: string): number | undefined {
  try {
    return ipToNumber(ip);
  } catch {
    return undefined;
  }
}

import { networkInterfaces } from 'node:os';
import { podNetworkForSlot } from '../local/pod-network.ts';

/**
 * Where checker pods can reach a report endpoint hosted inside this runner: an explicit host, else the
 * runner pod's IP, else the local cluster's host address when its bridge exists on this machine.
 * Returns undefined when none applies; the caller then needs KH_EXTERNAL_REPORTING_URL.
 */
export function reachableReportHost(explicit: { host?: string; podIp?: string }): string | undefined {
  if (explicit.host) return explicit.host;
  if (explicit.podIp) return explicit.podIp;
  // `khrun local up` always takes slot 0; test clusters on other slots pass their host explicitly.
  const bridge = networkInterfaces()[podNetworkForSlot(0).bridge];
  return bridge?.find((a) => a.family === 'IPv4')?.address;
}

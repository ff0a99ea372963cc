/** RFC 3339 at second precision, as Go writes metav1.Time, so v2 readers parse it unchanged. */
export function toKubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

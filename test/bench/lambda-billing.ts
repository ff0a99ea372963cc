import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';

/**
 * What AWS bills a Lambda invocation for (pure): its duration rounded up to the next millisecond, times the
 * configured memory in GB (memorySize MB / 1024). Since 2025-08-01 the init phase of a cold start is billed
 * the same way; warm invocations bill the handler's duration only.
 */
export function billedGbSeconds(durationMs: number, memoryMb: number): number {
  return (Math.ceil(durationMs) / 1000) * (memoryMb / 1024);
}

// CloudFormation's short tags, read as plain values: only memorySize is wanted from the file.
const CFN_TAGS = ['Ref', 'GetAtt', 'Join', 'If', 'Not', 'Equals', 'Sub', 'Select', 'Split'].flatMap((name) =>
  (['scalar', 'sequence', 'mapping'] as const).map(
    (kind) => new yaml.Type(`!${name}`, { kind, construct: (data: unknown) => ({ [`Fn::${name}`]: data }) }),
  ),
);

/** The memory a function of serverless.yml is configured with: its own memorySize, else the provider's. */
export function configuredMemoryMb(serverlessYaml: string, fn: string): number {
  const doc = yaml.load(serverlessYaml, { schema: yaml.DEFAULT_SCHEMA.extend(CFN_TAGS) }) as {
    provider?: { memorySize?: number };
    functions?: Record<string, { memorySize?: number } | undefined>;
  };
  if (!doc.functions?.[fn]) throw new Error(`serverless.yml has no function ${fn}`);
  const mb = doc.functions[fn]?.memorySize ?? doc.provider?.memorySize ?? 1024;
  if (!Number.isFinite(mb) || mb <= 0) throw new Error(`serverless.yml: memorySize of ${fn} is ${mb}`);
  return mb;
}

export async function readConfiguredMemoryMb(path: string, fn: string): Promise<number> {
  return configuredMemoryMb(await readFile(path, 'utf8'), fn);
}

/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests: it rejects what a lenient
 * scraper might let through (an unknown escape, a sample before its TYPE, a family split in two, a
 * histogram whose buckets are not cumulative or disagree with _count), and returns every sample with its
 * labels unescaped. parse-prometheus-text-format is used beside it as an independent reading, but it
 * loses the labels of labelled histograms, so histograms are checked here.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const METRIC = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`bad value "${text}" in: ${line}`);
  return Number(text);
}

function parseSample(line: string): Sample {
  const nameEnd = line.search(/[{ ]/);
  const name = nameEnd < 0 ? line : line.slice(0, nameEnd);
  if (!METRIC.test(name)) throw new Error(`bad metric name in: ${line}`);
  const labels: Record<string, string> = {};
  let i = name.length;
  if (line[i] === '{') {
    i += 1;
    while (line[i] !== '}') {
      const eq = line.indexOf('=', i);
      const label = line.slice(i, eq);
      if (eq < 0 || !LABEL.test(label)) throw new Error(`bad label name at ${i} in: ${line}`);
      if (label in labels) throw new Error(`duplicate label ${label} in: ${line}`);
      if (line[eq + 1] !== '"') throw new Error(`label value not quoted in: ${line}`);
      let value = '';
      let j = eq + 2;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] !== '\\') {
          value += line[j];
          continue;
        }
        const next = line[++j];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else throw new Error(`unknown escape \\${next} in: ${line}`);
      }
      if (j >= line.length) throw new Error(`unterminated label value in: ${line}`);
      labels[label] = value;
      i = j + 1;
      if (line[i] === ',') i += 1;
      else if (line[i] !== '}') throw new Error(`expected , or } at ${i} in: ${line}`);
    }
    i += 1;
  }
  if (line[i] !== ' ') throw new Error(`expected a space before the value in: ${line}`);
  const [value, timestamp, ...extra] = line.slice(i + 1).split(' ');
  if (extra.length || (timestamp !== undefined && !/^-?\d+$/.test(timestamp)))
    throw new Error(`trailing text in: ${line}`);
  return { name, labels, value: parseValue(value ?? '', line) };
}

function familyOf(sampleName: string, families: Map<string, Family>, current: Family | undefined): string {
  if (current && sampleName === current.name) return current.name;
  if (current && (current.type === 'histogram' || current.type === 'summary')) {
    for (const suffix of ['_bucket', '_sum', '_count']) {
      if (sampleName === current.name + suffix && (suffix !== '_bucket' || current.type === 'histogram'))
        return current.name;
    }
  }
  if (families.has(sampleName)) throw new Error(`samples of ${sampleName} are not contiguous`);
  return sampleName;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, Sample[]>();
  for (const s of family.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, samples] of series) {
    const buckets = samples.filter((s) => s.name === `${family.name}_bucket`);
    const count = samples.find((s) => s.name === `${family.name}_count`);
    if (!samples.some((s) => s.name === `${family.name}_sum`) || !count)
      throw new Error(`${family.name}${key}: no _sum or _count`);
    const bounds = buckets.map((b) => parseValue(b.labels.le ?? '', `le of ${family.name}`));
    if (bounds.at(-1) !== Number.POSITIVE_INFINITY)
      throw new Error(`${family.name}${key}: no +Inf bucket last`);
    for (let i = 1; i < buckets.length; i++) {
      if (!((bounds[i] as number) > (bounds[i - 1] as number)))
        throw new Error(`${family.name}${key}: le not increasing`);
      if ((buckets[i] as Sample).value < (buckets[i - 1] as Sample).value)
        throw new Error(`${family.name}${key}: buckets not cumulative`);
    }
    if (buckets.at(-1)?.value !== count.value)
      throw new Error(`${family.name}${key}: +Inf bucket differs from _count`);
  }
}

export function parsePromText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name = '', rest = ''] = meta;
      if (!METRIC.test(name)) throw new Error(`bad metric name in: ${line}`);
      let family = families.get(name);
      if (!family) {
        family = { name, type: 'untyped', help: '', samples: [] };
        families.set(name, family);
      } else if (family !== current || family.samples.length > 0) {
        throw new Error(`${kind} for ${name} after its samples`);
      }
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`unknown type in: ${line}`);
        family.type = rest;
      } else {
        family.help = rest.replace(/\\(n|\\)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
      }
      current = family;
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = parseSample(line);
    const name = familyOf(sample.name, families, current);
    let family = families.get(name);
    if (!family) {
      family = { name, type: 'untyped', help: '', samples: [] };
      families.set(name, family);
    }
    family.samples.push(sample);
    current = family;
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** The value of the one sample of a family whose labels include the given ones. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  const family = families.get(name.replace(/_(bucket|sum|count)$/, '')) ?? families.get(name);
  const matches = (family?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matches.length > 1)
    throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return matches[0]?.value;
}

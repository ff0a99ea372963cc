import { dump } from 'js-yaml';
import type { ConvertTarget } from '../config/convert-options.ts';
import { type ConvertResult, convertAll } from '../convert/convert-all.ts';
import { describeResource } from '../convert/convert-document.ts';
import { formatPath, type JsonObject } from '../convert/field-path.ts';
import { CHECK_KINDS, type CheckKind, classifyDocument } from '../convert/kinds.ts';
import { parseDocuments, type SourceDocument } from '../convert/parse-documents.ts';
import type { ConvertKube } from '../convert/port.ts';
import { prunedFields } from '../convert/pruned-fields.ts';
import { reportLines } from '../convert/report-lines.ts';
import { escapeControls } from '../core/terminal-text.ts';
import { apiErrorMessage, isNotFound } from '../kube/errors.ts';

/**
 * `khrun convert`'s exit codes, so a script tells the outcomes apart: 0 converted cleanly; 3 converted
 * with losses (each on stderr, `lost: ...`); 2 bad input (usage, unreadable or invalid input, a missing
 * resource, nothing to convert: nothing written); 1 the cluster failed or refused (nothing created, or the
 * created ones named).
 */
export const CONVERT_EXIT = { clean: 0, failed: 1, badInput: 2, lossy: 3 } as const;

export interface ConvertCommandOptions {
  files: readonly string[];
  targets: readonly ConvertTarget[];
  scope: { namespace: string } | 'all';
  output: 'yaml' | 'json';
  apply: boolean;
  acceptLosses: boolean;
  /** The cluster, when targets are read or --apply creates; `namespace` for created ones that name none. */
  cluster: { kube: ConvertKube; namespace: string } | undefined;
  /** A file's text; `-` is stdin. Throws when it cannot be read. */
  readInput: (path: string) => Promise<string>;
  write: (line: string) => void;
  warn: (line: string) => void;
}

/** Input that cannot be converted, named for the person at the terminal. */
class BadInput extends Error {
  override readonly name = 'BadInput';
}

async function readFiles(opts: ConvertCommandOptions): Promise<SourceDocument[]> {
  const documents: SourceDocument[] = [];
  for (const path of opts.files) {
    const origin = path === '-' ? '<stdin>' : path;
    let text: string;
    try {
      text = await opts.readInput(path);
    } catch (error) {
      throw new BadInput(
        `${origin}: cannot be read (${(error as Error).message}); give a readable file, or - for stdin`,
      );
    }
    const parsed = parseDocuments({ origin, text });
    if ('problem' in parsed) throw new BadInput(`${origin} ${parsed.problem.problem}; fix the file`);
    documents.push(...parsed.documents);
  }
  return documents;
}

async function readCluster(opts: ConvertCommandOptions): Promise<SourceDocument[]> {
  if (opts.targets.length === 0) return [];
  if (!opts.cluster) throw new Error('convert: resources named without a cluster');
  const { kube } = opts.cluster;
  const documents: SourceDocument[] = [];
  const namespace = opts.scope === 'all' ? undefined : opts.scope.namespace;
  for (const target of opts.targets) {
    const coordinates = `${CHECK_KINDS[target.kind].plural}.${CHECK_KINDS[target.kind].group}`;
    if (target.name !== undefined && namespace !== undefined) {
      const found = await kube.get(target.kind, namespace, target.name);
      if (!found)
        throw new BadInput(
          `${CHECK_KINDS[target.kind].names[0]} ${namespace}/${target.name} not found; list them with kubectl get ${coordinates} -n ${namespace}`,
        );
      documents.push({ origin: 'cluster', value: found });
      continue;
    }
    try {
      for (const item of await kube.list(target.kind, namespace))
        documents.push({ origin: 'cluster', value: item });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      throw new BadInput(
        `the cluster serves no ${coordinates}: its CRD is not installed (kubectl get crd ${coordinates})`,
      );
    }
  }
  return documents;
}

function render(objects: readonly JsonObject[], format: 'yaml' | 'json'): string {
  if (format === 'json')
    return JSON.stringify(
      objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects },
      null,
      2,
    );
  return objects.map((o) => dump(o, { noRefs: true, lineWidth: -1 }).trimEnd()).join('\n---\n');
}

function summary(result: ConvertResult): string {
  const count = (kind: string) => result.results.filter((r) => r.kind === kind).length;
  const lossy = result.results.filter(
    (r) => r.kind === 'converted' && r.findings.some((f) => f.effect === 'lost'),
  ).length;
  const parts = [`converted ${count('converted')}${lossy ? ` (${lossy} with losses)` : ''}`];
  if (count('kept')) parts.push(`kept ${count('kept')} other resources as they are`);
  if (count('dropped')) parts.push(`dropped ${count('dropped')} khstates`);
  if (count('invalid')) parts.push(`${count('invalid')} invalid: nothing written`);
  return `convert: ${parts.join(', ')}`;
}

const kindOf = (o: JsonObject): CheckKind => {
  const kind = classifyDocument(o);
  if (kind.kind !== 'check') throw new Error('convert: a converted resource of no check kind');
  return kind.check;
};

/**
 * --apply: every converted resource is first created with a server-side dry run (validated, defaulted
 * and pruned by the cluster's own CRD, nothing stored); only when all pass, and nothing is pruned (or
 * --accept-losses), are they created. Existing resources are never replaced. Returns the exit code and
 * what the API server stored.
 */
async function applyAll(
  opts: ConvertCommandOptions,
  converted: readonly JsonObject[],
  lossy: boolean,
): Promise<{ code: number; created: JsonObject[] }> {
  if (!opts.cluster) throw new Error('convert: --apply without a cluster');
  const { kube, namespace } = opts.cluster;
  if (lossy && !opts.acceptLosses) {
    opts.warn(
      'convert: nothing created: the conversion lost fields (above); add --accept-losses to create anyway',
    );
    return { code: CONVERT_EXIT.lossy, created: [] };
  }
  const objects: JsonObject[] = converted.map((o) => {
    const metadata = { ...(o.metadata as JsonObject) };
    metadata.namespace ??= namespace;
    return { ...o, metadata };
  });
  let refused = false;
  let pruned = false;
  for (const object of objects) {
    const who = describeResource(object);
    try {
      const stored = await kube.create(kindOf(object), object, true);
      for (const field of prunedFields(object.spec, stored.spec, ['spec'])) {
        pruned = true;
        opts.warn(
          escapeControls(
            `lost: ${who} (server-side dry run): ${formatPath(field)}: the cluster's CRD prunes it`,
          ),
        );
      }
    } catch (error) {
      refused = true;
      opts.warn(escapeControls(`refused: ${who} (server-side dry run): ${apiErrorMessage(error)}`));
    }
  }
  if (refused) {
    opts.warn(
      'convert: nothing created: the API server refused the resources above; existing ones are never replaced',
    );
    return { code: CONVERT_EXIT.failed, created: [] };
  }
  if (pruned && !opts.acceptLosses) {
    opts.warn(
      "convert: nothing created: the cluster's CRDs prune the fields above; add --accept-losses to create anyway",
    );
    return { code: CONVERT_EXIT.lossy, created: [] };
  }
  const created: JsonObject[] = [];
  for (const object of objects) {
    const who = describeResource(object);
    try {
      created.push(await kube.create(kindOf(object), object, false));
      opts.warn(escapeControls(`created: ${who}`));
    } catch (error) {
      opts.warn(escapeControls(`refused: ${who}: ${apiErrorMessage(error)}`));
      opts.warn(`convert: created ${created.length} of ${objects.length}; the rest were not`);
      return { code: CONVERT_EXIT.failed, created };
    }
  }
  return { code: lossy || pruned ? CONVERT_EXIT.lossy : CONVERT_EXIT.clean, created };
}

/**
 * `khrun convert`: khchecks and khjobs to HealthChecks and back, from files or the cluster. stdout: the
 * converted resources (and the other kinds of the input, as they were), YAML documents or JSON; with
 * --apply, what the API server stored. stderr: one line per field not carried over as it was, then a
 * summary. Bad input writes nothing to stdout.
 */
export async function convertCommand(opts: ConvertCommandOptions): Promise<number> {
  let documents: SourceDocument[];
  try {
    documents = [...(await readFiles(opts)), ...(await readCluster(opts))];
  } catch (error) {
    if (!(error instanceof BadInput)) {
      opts.warn(escapeControls(`convert: the cluster could not be read: ${apiErrorMessage(error)}`));
      return CONVERT_EXIT.failed;
    }
    opts.warn(escapeControls(`convert: ${error.message}`));
    return CONVERT_EXIT.badInput;
  }
  const result = convertAll(documents);
  for (const r of result.results) for (const line of reportLines(r)) opts.warn(line);
  if (result.verdict === 'invalid') {
    opts.warn(summary(result));
    return CONVERT_EXIT.badInput;
  }
  if (result.verdict === 'empty') {
    opts.warn(
      `convert: no ${Object.values(CHECK_KINDS)
        .map((k) => k.kind)
        .join(', ')} in the input; give files or resources that hold checks`,
    );
    return CONVERT_EXIT.badInput;
  }
  opts.warn(summary(result));
  const lossy = result.verdict === 'lossy';
  if (!opts.apply) {
    opts.write(render(result.outputs, opts.output));
    return lossy ? CONVERT_EXIT.lossy : CONVERT_EXIT.clean;
  }
  const applied = await applyAll(opts, result.converted, lossy);
  opts.write(render(applied.created.length > 0 ? applied.created : result.outputs, opts.output));
  return applied.code;
}

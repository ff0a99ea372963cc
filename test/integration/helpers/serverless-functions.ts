import yaml from 'js-yaml';

/**
 * serverless.yml's functions as Lambda would configure them (pure): handler, runtime, timeout, memory and
 * environment, with the Serverless variables the file uses resolved (${param:...} from params.default and
 * the overrides a deploy passes as --param, ${opt:x, 'default'}, ${sls:stage}, ${self:service}). What only a
 * deployment knows (a CloudFormation !Ref, !GetAtt, !Join of them) is asked of `resources`, so a local run
 * names its stand-ins (a function's name, a function URL) rather than retyping the file.
 */
export interface ServerlessFunction {
  name: string;
  /** `functions/lambda-run-check.handler`: the module path in the package, then the export. */
  handler: string;
  /** `nodejs22.x` */
  runtime: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** provider.environment, then the function's own: every value a string, as Lambda passes it. */
  environment: Record<string, string>;
  /** The function URL's auth type (`NONE`, `AWS_IAM`), when it has a URL. */
  urlAuth?: 'NONE' | 'AWS_IAM';
  /** Its reserved concurrency: the most invocations Lambda runs at once, when the file sets one. */
  reservedConcurrency?: number;
}

/** A CloudFormation intrinsic the file uses, as js-yaml reads the short form: `{ Ref: 'X' }`, `{ 'Fn::GetAtt': ... }`. */
export type Intrinsic = Record<string, unknown>;

export interface ServerlessOptions {
  /** --param overrides (`{ allowUnsignedReports: 'true' }`). */
  params?: Record<string, string>;
  /** --stage (default as the file says). */
  stage?: string;
  /** The value of a CloudFormation reference; throw for one the caller has no stand-in for. */
  resources: (ref: { kind: 'Ref' | 'GetAtt'; name: string }) => string;
}

// CloudFormation's short tags, read as the long form (`!Ref X` → `{ Ref: 'X' }`).
const CFN_TAGS = ['Ref', 'GetAtt', 'Join', 'If', 'Not', 'Equals', 'Sub', 'Select', 'Split'].flatMap((name) =>
  (['scalar', 'sequence', 'mapping'] as const).map(
    (kind) =>
      new yaml.Type(`!${name}`, {
        kind,
        construct: (data: unknown) => ({ [name === 'Ref' ? 'Ref' : `Fn::${name}`]: data }),
      }),
  ),
);

interface RawFunction {
  handler?: string;
  runtime?: string;
  timeout?: unknown;
  memorySize?: unknown;
  environment?: Record<string, unknown>;
  url?: unknown;
  reservedConcurrency?: unknown;
}

interface RawFile {
  service?: string;
  params?: { default?: Record<string, unknown> };
  provider?: {
    runtime?: string;
    stage?: string;
    timeout?: unknown;
    memorySize?: unknown;
    environment?: Record<string, unknown>;
  };
  functions?: Record<string, RawFunction>;
  custom?: Record<string, unknown>;
}

/** serverless.yml's text, read with CloudFormation's short tags. */
export function readServerlessYaml(text: string): RawFile {
  return yaml.load(text, { schema: yaml.DEFAULT_SCHEMA.extend(CFN_TAGS) }) as RawFile;
}

const VARIABLE = /\$\{([^{}]+)\}/;

/** Resolves the file's ${...} variables in a string, innermost first; a whole-string variable keeps its type. */
function resolveVariables(value: unknown, lookup: (expr: string) => unknown): unknown {
  if (typeof value !== 'string') return value;
  let text = value;
  for (let depth = 0; depth < 20; depth++) {
    const m = VARIABLE.exec(text);
    if (!m) return text;
    const resolved = lookup(m[1]!.trim());
    if (m[0] === text) {
      if (typeof resolved === 'string' && VARIABLE.test(resolved)) {
        text = resolved;
        continue;
      }
      return resolved;
    }
    text = text.replace(m[0], String(resolved));
  }
  throw new Error(`serverless.yml: variables nested too deeply in ${value}`);
}

function variableLookup(file: RawFile, opts: ServerlessOptions, stage: string) {
  const params = { ...(file.params?.default ?? {}), ...(opts.params ?? {}) };
  return (expr: string): unknown => {
    // `${opt:region, 'eu-west-1'}`: no CLI options here, so the fallback.
    const [source, fallback] = expr.split(/,(.*)/s).map((s) => s?.trim());
    const unquote = (s: string) => s.replace(/^['"]|['"]$/g, '');
    if (source!.startsWith('param:')) {
      const name = source!.slice('param:'.length);
      if (!(name in params)) throw new Error(`serverless.yml: \${param:${name}} has no value`);
      return params[name];
    }
    if (source!.startsWith('opt:')) {
      if (source === 'opt:stage' && opts.stage) return opts.stage;
      if (fallback === undefined) throw new Error(`serverless.yml: \${${expr}} needs --${source!.slice(4)}`);
      return unquote(fallback);
    }
    if (source === 'sls:stage') return stage;
    if (source === 'self:service') return file.service;
    throw new Error(`serverless.yml: \${${expr}} is not resolved locally`);
  };
}

/** A CloudFormation value: an intrinsic through `resources`, a Join of parts, else the value itself. */
function resolveIntrinsic(value: unknown, opts: ServerlessOptions): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const v = value as Intrinsic;
  if ('Ref' in v) return opts.resources({ kind: 'Ref', name: String(v.Ref) });
  if ('Fn::GetAtt' in v) {
    const att = v['Fn::GetAtt'];
    const name = Array.isArray(att) ? att.join('.') : String(att);
    return opts.resources({ kind: 'GetAtt', name });
  }
  if ('Fn::Join' in v) {
    const [sep, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => String(resolveIntrinsic(p, opts))).join(sep);
  }
  throw new Error(`serverless.yml: ${JSON.stringify(value)} is not resolved locally`);
}

function positiveInteger(value: unknown, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`serverless.yml: ${what} is ${String(value)}`);
  return n;
}

/** Every function of serverless.yml, configured as a deploy with these params would configure it. */
export function serverlessFunctions(text: string, opts: ServerlessOptions): Map<string, ServerlessFunction> {
  const file = readServerlessYaml(text);
  const provider = file.provider ?? {};
  const stageLookup = variableLookup(file, opts, '');
  const stage = opts.stage ?? String(resolveVariables(provider.stage ?? 'dev', stageLookup));
  const lookup = variableLookup(file, opts, stage);
  const value = (v: unknown) => resolveIntrinsic(resolveVariables(v, lookup), opts);
  const envOf = (env: Record<string, unknown> | undefined) =>
    Object.fromEntries(
      Object.entries(env ?? {}).map(([k, v]) => {
        const resolved = value(v);
        return [k, resolved === null || resolved === undefined ? '' : String(resolved)];
      }),
    );
  const out = new Map<string, ServerlessFunction>();
  for (const [name, fn] of Object.entries(file.functions ?? {})) {
    if (!fn?.handler) throw new Error(`serverless.yml: function ${name} has no handler`);
    // Lambda's defaults when neither the function nor the provider says: 6 s (Serverless) and 1024 MB.
    const url = resolveVariables(fn.url, (expr) => {
      // `${self:custom.statusUrl.${param:statusPublic}}`: a path into the file itself.
      if (!expr.startsWith('self:')) return lookup(expr);
      return expr
        .slice('self:'.length)
        .split('.')
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], file);
    });
    out.set(name, {
      name,
      handler: fn.handler,
      runtime: String(fn.runtime ?? provider.runtime ?? ''),
      timeoutSeconds: positiveInteger(value(fn.timeout ?? provider.timeout ?? 6), `timeout of ${name}`),
      memoryMb: positiveInteger(value(fn.memorySize ?? provider.memorySize ?? 1024), `memorySize of ${name}`),
      environment: { ...envOf(provider.environment), ...envOf(fn.environment) },
      urlAuth: urlAuthOf(url),
      ...(fn.reservedConcurrency === undefined
        ? {}
        : {
            reservedConcurrency: positiveInteger(
              value(fn.reservedConcurrency),
              `reservedConcurrency of ${name}`,
            ),
          }),
    });
  }
  return out;
}

/** `url: true` is a public URL; `url: { authorizer: aws_iam }` an IAM-authenticated one. */
function urlAuthOf(url: unknown): ServerlessFunction['urlAuth'] {
  if (url === undefined || url === null || url === false) return undefined;
  if (url === true) return 'NONE';
  const authorizer = (url as { authorizer?: string }).authorizer;
  return authorizer === 'aws_iam' ? 'AWS_IAM' : 'NONE';
}

import {
  type ParameterKeyText,
  putParameterCommand,
  REPORT_KEY_PARAMETER_ENV,
  reportKeyParameter,
} from '../config/report-key-parameter.ts';
import { type Env, NO_FLAGS } from '../config/setting.ts';

/**
 * Reads one SSM parameter's decrypted value (ssm-parameter.ts is the real one). Rejects with the error the
 * SDK gave, or one whose cause chain holds it: its name (ParameterNotFound, AccessDeniedException) says why.
 */
export type ParameterReader = (name: string) => Promise<string>;

/** Why the key's parameter could not be read, from the SDK's error name (ReportKeyParameterError.code). */
export type ParameterFailure = 'not-found' | 'access-denied' | 'key-unusable' | 'other';

const FAILURE_OF: Readonly<Record<string, ParameterFailure>> = {
  ParameterNotFound: 'not-found',
  // Powertools' name for a parameter without a value (its throwOnMissing).
  ParameterNotFoundError: 'not-found',
  ParameterVersionNotFound: 'not-found',
  // SSM answers this both for ssm:GetParameter and for kms:Decrypt of a SecureString.
  AccessDeniedException: 'access-denied',
  InvalidKeyId: 'key-unusable',
};

/**
 * The report key's parameter could not be read: the invocation fails with this rather than run without
 * the key (the report function never falls back to unsigned reports). The message names the parameter and
 * what to do; `cause` is the SDK's error.
 */
export class ReportKeyParameterError extends Error {
  override readonly name = 'ReportKeyParameterError';
  /** The parameter's name, as KHRUN_REPORT_KEY_PARAMETER gives it. */
  readonly parameter: string;
  readonly failure: ParameterFailure;
  /** The SDK's error name (`ParameterNotFound`), when it had one. */
  readonly code: string | undefined;

  constructor(opts: {
    parameter: string;
    failure: ParameterFailure;
    code: string | undefined;
    cause: unknown;
  }) {
    const detail = errorText(opts.cause);
    super(
      `${REPORT_KEY_PARAMETER_ENV}=${JSON.stringify(opts.parameter)}: ${PROBLEM[opts.failure]} (${detail}); ` +
        REMEDY[opts.failure](opts.parameter),
      { cause: opts.cause },
    );
    this.parameter = opts.parameter;
    this.failure = opts.failure;
    this.code = opts.code;
  }
}

const PROBLEM: Readonly<Record<ParameterFailure, string>> = {
  'not-found': 'the SSM parameter that should hold the report key does not exist in this account and region',
  'access-denied': "this function's role may not read the SSM parameter that holds the report key",
  'key-unusable': "the KMS key of the report key's SSM parameter cannot be used",
  other: 'the SSM parameter that holds the report key cannot be read',
};

const GRANT =
  "grant the function's role ssm:GetParameter on the parameter and kms:Decrypt through SSM on its KMS key " +
  '(serverless.yml does both for its reportKeyParameter; the default aws/ssm key needs no kms grant)';

const REMEDY: Readonly<Record<ParameterFailure, (parameter: string) => string>> = {
  'not-found': (p) =>
    `create it as a SecureString, the one key of runCheck and report: \`${putParameterCommand(p)}\`, ` +
    `or set ${REPORT_KEY_PARAMETER_ENV} to the parameter that holds it`,
  'access-denied': () => GRANT,
  'key-unusable': (p) =>
    `enable the parameter's KMS key, or put the key again under a usable one: \`${putParameterCommand(p, { overwrite: true })}\``,
  other: () => `check the region (AWS_REGION) and the function's credentials, then invoke again; ${GRANT}`,
};

/** The first name in the cause chain that FAILURE_OF knows, else the innermost error's (the SDK's) name. */
function classify(error: unknown): { failure: ParameterFailure; code: string | undefined } {
  let inner: string | undefined;
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++, e = e.cause) {
    inner = e.name;
    const failure = FAILURE_OF[e.name];
    if (failure) return { failure, code: e.name };
  }
  return { failure: 'other', code: inner };
}

/** The innermost error's name and message, bounded: the SDK's says which role and resource were refused. */
function errorText(error: unknown): string {
  let e: unknown = error;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

/**
 * The report key's text from the SSM parameter KHRUN_REPORT_KEY_PARAMETER names, for the Lambda options
 * builders (lambdaReportOptions, lambdaRunPlan), which check it like any key. undefined when the variable is
 * unset: the key, if any, is then KHRUN_REPORT_KEY(_FILE). A conflicting setting is a ConfigError before
 * anything is read; a parameter that cannot be read is a ReportKeyParameterError.
 */
export async function reportKeyFromParameter(
  env: Env,
  read: ParameterReader,
): Promise<ParameterKeyText | undefined> {
  const parameter = reportKeyParameter({ flags: {}, env, flagLabel: NO_FLAGS });
  if (parameter === undefined) return undefined;
  try {
    return { parameter, text: await read(parameter) };
  } catch (error) {
    throw new ReportKeyParameterError({ parameter, ...classify(error), cause: error });
  }
}

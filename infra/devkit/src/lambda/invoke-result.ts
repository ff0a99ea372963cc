/**
 * The emulator's REPORT line of one invocation, as Lambda writes it to the function's log. Unlike Lambda,
 * the emulator starts the runtime inside the first invocation: that invocation's Duration holds the init
 * phase, and its "Init Duration" only the handing over of the init message (well under a millisecond).
 */
export interface ReportLine {
  requestId: string;
  /** The emulator's Init Duration (first invocation of an emulator only): not the runtime's start. */
  initMs?: number;
  durationMs: number;
  billedMs: number;
  memorySizeMb: number;
}

/** The runtime's error document: the handler threw, or the module could not be loaded (init). */
export interface FunctionError {
  errorType: string;
  errorMessage: string;
  trace?: string[];
}

/** One synchronous invocation through the emulator's invoke API. */
export interface InvokeResult {
  requestId: string;
  statusCode: number;
  body: string;
  /** The handler's return value, when it returned (parsed from JSON). */
  payload?: unknown;
  /**
   * The error the runtime interface client reported (POST .../invocation/ID/error, or /init/error). Lambda
   * answers such an invocation with X-Amz-Function-Error: Unhandled and this document as the payload; the
   * emulator answers 200 with the document and drops the header (its response writer keeps no headers), or
   * 502 when the runtime failed to start. The document is told apart by its shape: errorType and
   * errorMessage, and nothing but trace beside them.
   */
  functionError?: FunctionError;
  /** The runtime's timeout ended the invocation ("Task timed out after N.00 seconds"; the emulator's 200). */
  timedOut: boolean;
  /** Request to response, measured by the caller. */
  clientMs: number;
  report?: ReportLine;
}

const REPORT = /^REPORT RequestId: (\S+)\t(.*)$/;

/** A REPORT line's fields (pure): `REPORT RequestId: X\tInit Duration: 1.2 ms\tDuration: 3.4 ms\t...`. */
export function parseReportLine(line: string): ReportLine | undefined {
  const m = REPORT.exec(line.trimEnd());
  if (!m) return undefined;
  const fields = new Map(
    m[2]!
      .split('\t')
      .map((f) => /^([A-Za-z ]+): ([\d.]+) (?:ms|MB)$/.exec(f.trim()))
      .filter((f): f is RegExpExecArray => f !== null)
      .map((f) => [f[1]!, Number(f[2])] as const),
  );
  const duration = fields.get('Duration');
  if (duration === undefined) return undefined;
  return {
    requestId: m[1]!,
    initMs: fields.get('Init Duration'),
    durationMs: duration,
    billedMs: fields.get('Billed Duration') ?? Math.ceil(duration),
    memorySizeMb: fields.get('Memory Size') ?? 0,
  };
}

const TIMED_OUT = /^Task timed out after [\d.]+ seconds$/;

function json(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const ERROR_KEYS = new Set(['errorType', 'errorMessage', 'trace']);

function asFunctionError(doc: unknown): FunctionError | undefined {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return undefined;
  const d = doc as Record<string, unknown>;
  if (typeof d.errorType !== 'string' || typeof d.errorMessage !== 'string') return undefined;
  if (Object.keys(d).some((k) => !ERROR_KEYS.has(k))) return undefined;
  const trace = Array.isArray(d.trace) ? d.trace.map(String) : undefined;
  return { errorType: d.errorType, errorMessage: d.errorMessage, trace };
}

/** What an invocation's answer means (pure): a return value, the runtime's error, or its timeout. */
export function invokeResult(r: {
  requestId: string;
  statusCode: number;
  body: string;
  clientMs: number;
  report?: ReportLine;
}): InvokeResult {
  const base = { ...r, timedOut: false };
  if (r.statusCode === 200 && TIMED_OUT.test(r.body.trim())) return { ...base, timedOut: true };
  const doc = json(r.body);
  const functionError = asFunctionError(doc);
  if (functionError || r.statusCode !== 200) return { ...base, functionError };
  return { ...base, payload: doc };
}

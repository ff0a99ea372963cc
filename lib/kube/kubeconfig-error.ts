/** What is wrong with a kubeconfig, for the caller to say what to do about it (lib/config/kubeconfig.ts). */
export const KubeconfigProblem = {
  /** The file named does not exist. */
  Missing: 'Missing',
  /** It exists but cannot be read: a directory, no permission. */
  Unreadable: 'Unreadable',
  /** Its text does not parse as YAML (JSON is YAML). */
  NotYaml: 'NotYaml',
  /** Empty, or only comments: /dev/null, a file truncated by a failed write. */
  Empty: 'Empty',
  /** YAML, but not a mapping: a string, a list. */
  NotAKubeconfig: 'NotAKubeconfig',
  /** A mapping client-node refuses (a cluster without a server, a context without a cluster). */
  Invalid: 'Invalid',
  NoClusters: 'NoClusters',
  NoContexts: 'NoContexts',
  /** No current-context, and none asked for with --context. */
  NoCurrentContext: 'NoCurrentContext',
  /** current-context names a context the kubeconfig does not have. */
  UnknownCurrentContext: 'UnknownCurrentContext',
  /** The context in use names a cluster the kubeconfig does not have. */
  UnknownCluster: 'UnknownCluster',
} as const;
export type KubeconfigProblem = (typeof KubeconfigProblem)[keyof typeof KubeconfigProblem];

/**
 * A kubeconfig khrun cannot talk to a cluster with. `file` is the file at fault, or undefined when the fault
 * is in what the files add up to (no clusters among them); `detail` says what is wrong in words that read
 * after "the file" or "the kubeconfig" ("is empty", "has no contexts"). The message names both.
 */
export class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
  readonly problem: KubeconfigProblem;
  readonly file: string | undefined;
  readonly detail: string;

  constructor(opts: { problem: KubeconfigProblem; file?: string; detail: string; cause?: unknown }) {
    super(`${opts.file === undefined ? 'the kubeconfig' : `kubeconfig ${opts.file}`} ${opts.detail}`, {
      cause: opts.cause,
    });
    this.problem = opts.problem;
    this.file = opts.file;
    this.detail = opts.detail;
  }
}

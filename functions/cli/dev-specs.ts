import type { CommandSpec } from './flags.ts';
import { HELP_ONLY } from './flags.ts';

// The developer commands' descriptions, apart from their bodies (dev.ts): `khrun help` lists them and
// parses their flags in every build, while their bodies (the local cluster, esbuild) load only from a
// checkout.

export const localSpec: CommandSpec = {
  name: 'local',
  args: 'up',
  completeArgs: ['up'],
  summary: '(dev) run the local cluster in the foreground; writes DIR/kubeconfig',
  description:
    'Starts the local cluster (etcd, kube-apiserver, controller manager, scheduler, the process kubelet) ' +
    'and keeps it up until Ctrl-C, then tears it down. The first run builds the binaries from the Go module ' +
    'proxy (minutes on 2 cores); later runs take them from the cache.',
  examples: [
    {
      what: 'the local cluster until Ctrl-C; then export KUBECONFIG=.khrun/local/kubeconfig',
      line: 'khrun local up',
    },
    {
      what: 'the kubeconfig elsewhere, with images of your own mapped to commands',
      line: 'khrun local up --dir /tmp/kh --image-map images.yaml',
    },
  ],
  flags: {
    dir: {
      type: 'string',
      value: 'DIR',
      help: 'where to write the kubeconfig (default .khrun/local)',
      complete: 'directory',
    },
    'image-map': {
      type: 'string',
      value: 'FILE',
      complete: 'file',
      help: "what containers without command run: their image's ENTRYPOINT and CMD (YAML or JSON; docs/local-cluster.md)",
    },
    ...HELP_ONLY,
  },
  env: ['KUBEBUILDER_ASSETS', 'KHRUN_CACHE_DIR', 'XDG_CACHE_HOME'],
  dev: true,
};

export const demoSpec: CommandSpec = {
  name: 'demo',
  summary: '(dev) start the local cluster, run the example checks once, print the outcomes, tear down',
  description:
    'What `npm start` runs: the local cluster, the example khchecks of infra/examples, one `khrun run` of ' +
    'each, a table of their outcomes read back from the khstates, then a full teardown.',
  examples: [
    {
      what: 'what npm start runs',
      line: 'khrun demo',
    },
  ],
  flags: HELP_ONLY,
  env: ['KUBEBUILDER_ASSETS', 'KHRUN_CACHE_DIR', 'XDG_CACHE_HOME'],
  dev: true,
};

export const buildSpec: CommandSpec = {
  name: 'build',
  summary: '(dev) bundle functions/ (the CLI and the Lambda handlers) with esbuild',
  description:
    'Bundles each entrypoint of functions/ into one minified ESM file for Node 20 with a source map, ' +
    'writes meta.json and prints the sizes; with --measure, also the cold import time of each bundle. ' +
    "The revision compiled in (khrun version) is the checkout's git commit, marked -dirty when tracked " +
    'files differ from it, unless --revision says otherwise.',
  examples: [
    {
      what: "the bundles in dist/ (the image's)",
      line: 'khrun build',
    },
    {
      what: 'elsewhere, with the cold import time of each (median of 5)',
      line: 'khrun build --outdir /tmp/dist --measure 5',
    },
  ],
  flags: {
    outdir: {
      type: 'string',
      value: 'DIR',
      help: 'where to write the bundles (default dist/)',
      complete: 'directory',
    },
    measure: {
      type: 'string',
      value: 'N',
      help: 'import each bundle in N fresh Node processes; print the median',
    },
    revision: {
      type: 'string',
      value: 'REV',
      help: "the source revision `khrun version` reports ('' for none; default: the checkout's git commit)",
    },
    ...HELP_ONLY,
  },
  dev: true,
};

export const DEV_SPECS: readonly CommandSpec[] = [localSpec, demoSpec, buildSpec];

import { join, resolve } from 'node:path';
import { ConfigError } from '../../../lib/config/config-error.ts';
import { type ConfigInput, type Env, setting } from '../../../lib/config/setting.ts';
import { integer } from '../../../lib/config/values.ts';
import { REVISION_PATTERN } from './build/revision.ts';

// Options of the developer commands (`khrun local up`, `khrun demo`, `khrun build`). Only the dev module
// (functions/cli/dev.ts) imports this file, so none of it is in a product bundle.

/** Where built binaries are cached: KHRUN_CACHE_DIR, else $XDG_CACHE_HOME/khrun, else ~/.cache/khrun. */
export function cacheDir(env: Env): string {
  return env.KHRUN_CACHE_DIR || join(env.XDG_CACHE_HOME || join(env.HOME || '/root', '.cache'), 'khrun');
}

export interface LocalClusterSettings {
  root: string;
  cacheDir: string;
  /** Prebuilt control-plane binaries (KUBEBUILDER_ASSETS), instead of building them. */
  kubebuilderAssets: string | undefined;
}

function localClusterSettings(
  input: ConfigInput<{ [flag: string]: string | boolean | undefined }>,
  root: string,
) {
  const settings: LocalClusterSettings = {
    root,
    cacheDir: cacheDir(input.env),
    kubebuilderAssets: setting(input, { env: ['KUBEBUILDER_ASSETS'] }).text,
  };
  return settings;
}

/**
 * `khrun local up [--dir DIR] [--image-map FILE]`: DIR (default .khrun/local) receives the kubeconfig; FILE
 * says what containers without `command` run (src/local/kubelet/image-map.ts reads it).
 */
export function localUpOptions(
  input: ConfigInput<{ dir?: string; 'image-map'?: string }> & {
    positionals: readonly string[];
    root: string;
  },
): LocalClusterSettings & { dir: string; imageMapFile: string | undefined } {
  if (input.positionals.length !== 1 || input.positionals[0] !== 'up') {
    throw new ConfigError({
      setting: 'local',
      value: input.positionals.join(' ') || undefined,
      problem: 'the local command has one subcommand: local up',
      remedy: 'run khrun local up [--dir DIR]',
    });
  }
  const imageMap = setting(input, { flags: ['image-map'] }).text;
  return {
    ...localClusterSettings(input, input.root),
    dir: resolve(setting(input, { flags: ['dir'] }).text ?? '.khrun/local'),
    imageMapFile: imageMap === undefined ? undefined : resolve(imageMap),
  };
}

/** `khrun demo`. */
export function demoOptions(
  input: ConfigInput<Record<string, never>> & { root: string },
): LocalClusterSettings {
  return localClusterSettings(input, input.root);
}

/**
 * `khrun build [--outdir DIR] [--measure N] [--revision REV]`: REV is compiled into the bundles for
 * `khrun version` ('' for none); without the flag, the checkout's git commit (build-command.ts).
 */
export function buildOptions(
  input: ConfigInput<{ outdir?: string; measure?: string; revision?: string }> & { root: string },
): {
  root: string;
  outdir: string;
  measureRuns: number;
  revision: string | undefined;
} {
  const revision = setting(input, { flags: ['revision'] }).text;
  if (revision && !REVISION_PATTERN.test(revision)) {
    throw new ConfigError({
      setting: '--revision',
      value: revision,
      problem: 'must be a commit id or a name of letters, digits and ._+- (at most 64 characters)',
      remedy:
        'pass the commit the bundle is built from, e.g. --revision "$(git rev-parse HEAD)", or "" for none',
    });
  }
  return {
    root: input.root,
    outdir: resolve(setting(input, { flags: ['outdir'] }).text ?? join(input.root, 'dist')),
    measureRuns: integer(setting(input, { flags: ['measure'] }), { min: 0, what: 'runs' }) ?? 0,
    revision,
  };
}

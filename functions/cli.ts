import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../lib/config/config-error.ts';
import { EXIT } from '../lib/core/exit-codes.ts';
import { escapeControls } from '../lib/core/terminal-text.ts';
import type { CliContext } from './cli/context.ts';
import { type DevLoader, main } from './cli/main.ts';

// The khrun process: functions/cli/main.ts dispatches (usage, flags, exit codes), each command parses its
// flags from its description in functions/cli/, turns flags and environment into options with lib/config
// and calls lib/commands. This file only wires the process in: stdout, stderr, the environment and the
// developer commands' module.

/**
 * The developer commands' module, named by a computed specifier so that esbuild does not follow it: the
 * product bundle (dist/khrun.mjs, the image) then carries neither the local cluster nor esbuild. From a
 * checkout (functions/khrun.mjs, through tsx) it is found next to this file.
 */
const DEV_MODULE = ['.', 'cli', 'dev.ts'].join('/');

const loadDev: DevLoader = async (command) => {
  const url = new URL(DEV_MODULE, import.meta.url);
  if (!existsSync(fileURLToPath(url))) {
    throw new ConfigError({
      setting: command,
      problem: `is a developer command, not part of this build (${fileURLToPath(import.meta.url)})`,
      remedy: `run it from a khrun checkout: npm ci, then npx khrun ${command}`,
    });
  }
  const { devCommands } = (await import(url.href)) as typeof import('./cli/dev.ts');
  const body = Object.hasOwn(devCommands, command) ? devCommands[command] : undefined;
  if (!body) throw new Error(`${DEV_MODULE} has no command ${command}`);
  return body;
};

const ctx: CliContext = {
  root: resolve(import.meta.dirname, '..'),
  env: process.env,
  write: (line) => process.stdout.write(`${line}\n`),
  warn: (line) => process.stderr.write(`${line}\n`),
};

main(process.argv.slice(2), ctx, loadDev).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // An API server's or a pod's words can be in the message: shown, never acted on by the terminal.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`khrun: ${escapeControls(message, { keepNewlines: true })}\n`);
    process.exitCode = EXIT.runnerError;
  },
);

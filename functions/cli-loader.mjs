// The CLI's entry in a build: the build copies this file beside the CLI bundle as <name>.mjs (dist/khrun.mjs,
// the image's and the npm package's; .khrun/cli-<id>.mjs in a checkout) and runs <name>.cjs, the bundle,
// compiled with the V8 code cache the build wrote beside it (<name>.cjs.cache). Compiling a 2.5 MB bundle
// was half of every start's CPU (`khrun version` profiled: 217 of 458 ms): each runner, tick, sync and
// `khrun run` paid it. The cache is used only when it was made from this very bundle (it begins with the
// bundle's sha256) and V8 takes it (the same Node and flags); otherwise the bundle compiles as it would
// without one: always correct, only slower. Node maps no stack frames of code it did not load itself, so
// with source maps on (--enable-source-maps, as the image runs it) the bundle's frames are mapped here,
// from <name>.cjs.map read at the first stack that needs it (Node's own reads and parses a map at every
// start: +90 ms). Plain JavaScript with no imports but Node's: nothing else is next to it in the image.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire, SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

/** Set to 1 by the build's one run of the bundle: on exit, the cache of what that run compiled is written. */
const WRITE_CACHE_ENV = 'KHRUN_WRITE_CODE_CACHE';
const DIGEST_BYTES = 32;
/** CommonJS's own wrapper, on the bundle's first line so that line numbers stay the bundle's. */
const WRAPPER = '(function (exports, require, module, __filename, __dirname) {';

const bundle = fileURLToPath(import.meta.url).replace(/\.mjs$/, '.cjs');
const cacheFile = `${bundle}.cache`;
const source = readFileSync(bundle, 'utf8');
const digest = createHash('sha256').update(source).digest();

/** The cache's V8 data when the cache belongs to this bundle, else undefined. */
function readCache() {
  let file;
  try {
    file = readFileSync(cacheFile);
  } catch {
    return undefined;
  }
  return file.length > DIGEST_BYTES && file.subarray(0, DIGEST_BYTES).equals(digest)
    ? file.subarray(DIGEST_BYTES)
    : undefined;
}

/** Error.prepareStackTrace that shows the bundle's frames at their source positions (V8's format). */
function mapBundleFrames() {
  let map;
  const sourceMap = () => {
    if (map === undefined) {
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, 'utf8')));
      } catch {
        map = null;
      }
    }
    return map;
  };
  const frame = (site) => {
    const line = site.getLineNumber();
    const column = line === 1 ? site.getColumnNumber() - WRAPPER.length : site.getColumnNumber();
    if (site.getFileName() !== bundle || !line || !column || !sourceMap()) return `${site}`;
    const entry = sourceMap().findEntry(line - 1, column - 1);
    if (!entry?.originalSource) return `${site}`;
    const where = `${resolve(dirname(bundle), entry.originalSource)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
    const name = site.getFunctionName();
    return name ? `${name} (${where})` : where;
  };
  Error.prepareStackTrace = (error, sites) => {
    let head;
    try {
      head = String(error);
    } catch {
      head = 'Error';
    }
    return [head, ...sites.map((site) => `    at ${frame(site)}`)].join('\n');
  };
}

const script = new vm.Script(`${WRAPPER}${source}\n})`, {
  filename: bundle,
  cachedData: readCache(),
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
if (process.env[WRITE_CACHE_ENV] === '1') {
  process.once('exit', () => {
    try {
      writeFileSync(cacheFile, Buffer.concat([digest, script.createCachedData()]));
    } catch (error) {
      // The build finds no cache and says so; anyone else setting the variable keeps the command's outcome.
      process.stderr.write(`khrun: could not write the code cache ${cacheFile}: ${error}\n`);
    }
  });
}
if (process.sourceMapsEnabled) mapBundleFrames();
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));

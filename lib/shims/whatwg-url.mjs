// Bundled in place of the whatwg-url package (BUNDLE_ALIASES, infra/devkit/src/build/bundle.ts). node-fetch 2 imports it only as
// the fallback of `require('url').URL`, which every Node version khrun runs on has; the package and its tr46
// tables were a quarter of the CLI bundle, parsed at every start.
export const URL = globalThis.URL;
export const URLSearchParams = globalThis.URLSearchParams;
export default { URL, URLSearchParams };

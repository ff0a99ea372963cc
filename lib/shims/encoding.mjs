// Bundled in place of the encoding package (BUNDLE_ALIASES, infra/devkit/src/build/bundle.ts). node-fetch 2 loads it at start for
// Response.textConverted() alone, which nothing of khrun calls; without it that method throws node-fetch's own
// "The package `encoding` must be installed". It and iconv-lite were 480 KB of the CLI bundle.
export {};

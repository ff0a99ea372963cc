#!/usr/bin/env node
// The `khrun` command for people: runs the TypeScript CLI directly (no build step needed after npm ci).
// The deployable bundles under dist/ are built from the same entrypoints by `npm run build`.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');

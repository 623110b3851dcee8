#!/usr/bin/env node
// Launcher for the bundled CLI (`npm run build`, run by `npm ci` and `npm pack` through `prepare`):
// dist/cli/launch.cjs runs dist/cli/driftless.cjs with V8's code cache (src/cli/compile-cache.ts).
// CommonJS, not an ES module: Node starts a CommonJS entry without its ES module loader.
/* global require */
// eslint-disable-next-line @typescript-eslint/no-require-imports
require('../dist/cli/launch.cjs');

#!/usr/bin/env node
// Launcher for the bundled CLI (`npm run build`, run by `npm ci` and `npm pack` through `prepare`).
import '../dist/cli/run.js';

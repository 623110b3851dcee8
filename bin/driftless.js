#!/usr/bin/env node
// Launcher for the compiled CLI (`npm run build`, run by `npm ci` through `prepare`).
import '../dist/src/cli/run.js';

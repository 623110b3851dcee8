#!/usr/bin/env node
// Launcher for the compiled CLI (`npm run build`, run by `npm ci` through `prepare`).
import { runCli } from '../dist/src/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));

/**
 * `npm run bench [-- [--quick] [--runs N] [name ...]]`: runs the benchmarks
 * (all, or those named) against a test cluster and Git server started here,
 * prints the table and writes bench/results.json. See bench/README.md.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cliProcess } from './cli-process.ts';
import { driftCheck } from './drift-check.ts';
import { faults } from './faults.ts';
import { firstApply } from './first-apply.ts';
import { fleet } from './fleet.ts';
import { gitFetch } from './git-fetch.ts';
import { lambdaBundles } from './lambda-bundles.ts';
import { BenchContext } from './lib/context.ts';
import { evaluate, printTable, writeResults, type BenchmarkResult } from './lib/report.ts';
import type { Benchmark } from './lib/types.ts';
import { pushToApplied } from './push-to-applied.ts';
import { render } from './render.ts';
import { syncRss } from './sync-rss.ts';
import { webhookLoad } from './webhook-load.ts';

const BENCHMARKS: readonly Benchmark[] = [
  firstApply,
  driftCheck,
  pushToApplied,
  syncRss,
  lambdaBundles,
  gitFetch,
  cliProcess,
  render,
  webhookLoad,
  faults,
  fleet,
];

const RESULTS_FILE = fileURLToPath(new URL('results.json', import.meta.url));

function usage(): string {
  return [
    'usage: npm run bench -- [--quick] [--runs N] [name ...]',
    `benchmarks: ${BENCHMARKS.map((b) => b.name).join(', ')}`,
  ].join('\n');
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(usage());
    return 0;
  }
  const unknown = positionals.filter((name) => !BENCHMARKS.some((b) => b.name === name));
  if (unknown.length > 0) {
    console.error(`unknown benchmark: ${unknown.join(', ')}\n${usage()}`);
    return 2;
  }
  const runs = values.runs === undefined ? (values.quick ? 3 : 5) : Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    console.error(`--runs must be a positive integer, not ${values.runs}`);
    return 2;
  }
  const selected =
    positionals.length > 0 ? BENCHMARKS.filter((b) => positionals.includes(b.name)) : BENCHMARKS;

  const ctx = await BenchContext.create({ runs, quick: values.quick });
  const results: Record<string, BenchmarkResult> = {};
  const started = Date.now();
  try {
    for (const benchmark of selected) {
      process.stderr.write(`# ${benchmark.name}: ${benchmark.title}\n`);
      const base = {
        title: benchmark.title,
        date: new Date().toISOString(),
        runs,
        quick: values.quick,
      };
      try {
        const rows = (await benchmark.run(ctx)).map(evaluate);
        results[benchmark.name] = { ...base, rows };
      } catch (error) {
        // One broken benchmark must not cost the figures of the others.
        const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
        process.stderr.write(`# ${benchmark.name} failed: ${message}\n`);
        results[benchmark.name] = { ...base, rows: [], error: message.split('\n')[0] ?? message };
      }
    }
  } finally {
    await ctx.close();
  }
  console.log(
    `\nDriftless benchmarks — ${values.quick ? 'QUICK smoke run, ' : ''}median of ${runs} runs, ${((Date.now() - started) / 1000).toFixed(0)} s in all\n`,
  );
  printTable(results);
  await writeResults(RESULTS_FILE, results);
  console.log(`\nwrote ${RESULTS_FILE}`);
  return 0;
}

process.exitCode = await main();

/**
 * A node:test reporter that prints nothing until the run ends, then one line per failed test
 * (file, name, first line of the error). `npm test` runs it after node's own reporter, so the
 * failures are the last lines of the output: a CI log that keeps only its tail still names
 * the test that failed, which the TAP stream alone (a failure somewhere among 1,200 tests)
 * does not.
 *
 * JavaScript, not TypeScript: node loads reporters before `--import tsx` can compile them.
 */
import { relative } from 'node:path';
import process from 'node:process';

/** @param {{ failureType?: string, cause?: unknown, message?: string } | undefined} error */
function firstLine(error) {
  const cause = error?.cause;
  const message = cause instanceof Error ? cause.message : (error?.message ?? String(cause));
  return message.split('\n')[0].slice(0, 300);
}

/** @param {AsyncIterable<{ type: string, data: any }>} source */
export default async function* failureSummary(source) {
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    // A suite that failed only because a test in it failed adds nothing to that test's line.
    if (details.error?.failureType === 'subtestsFailed') continue;
    const where = file ? relative(process.cwd(), file) : '(no file)';
    failures.push(`# FAILED ${where} — ${name}: ${firstLine(details.error)}`);
  }
  if (failures.length > 0) yield `# ${failures.length} failed:\n${failures.join('\n')}\n`;
}

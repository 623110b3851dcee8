/**
 * A node:test reporter that prints nothing until the run ends, then the first lines of each
 * failed test's error (what a test's message explains: deliveries, logs) and last one line per
 * failed test (file, name, first line of the error). `npm test` runs it after node's own
 * reporter, so the failures are the last lines of the output: a CI log that keeps only its
 * tail still names the test that failed, which the TAP stream alone (a failure somewhere among
 * 1,200 tests) does not, and shows as much of why as the tail holds.
 *
 * JavaScript, not TypeScript: node loads reporters before `--import tsx` can compile them.
 */
import { relative } from 'node:path';
import process from 'node:process';

/** Lines of one failure's error printed before the list; the rest is in the TAP stream. */
const DETAIL_LINES = 30;

/** @param {{ failureType?: string, cause?: unknown, message?: string } | undefined} error */
function messageOf(error) {
  const cause = error?.cause;
  return cause instanceof Error ? cause.message : (error?.message ?? String(cause));
}

/** @param {AsyncIterable<{ type: string, data: any }>} source */
export default async function* failureSummary(source) {
  const failures = [];
  const explanations = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    // A suite that failed only because a test in it failed adds nothing to that test's line.
    if (details.error?.failureType === 'subtestsFailed') continue;
    const where = file ? relative(process.cwd(), file) : '(no file)';
    const lines = messageOf(details.error).split('\n');
    failures.push(`# FAILED ${where} — ${name}: ${lines[0].slice(0, 300)}`);
    explanations.push(
      `# ${where} — ${name}:`,
      ...lines.slice(0, DETAIL_LINES).map((line) => `#   ${line.slice(0, 400)}`),
    );
  }
  if (failures.length > 0) {
    yield `${explanations.join('\n')}\n# ${failures.length} failed:\n${failures.join('\n')}\n`;
  }
}

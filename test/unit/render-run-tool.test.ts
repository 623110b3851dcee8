/**
 * The limits a renderer runs under: time, output size, a clean environment,
 * and errors that say what failed. Driven with small shell commands standing
 * in for the renderer binary (the real kustomize and helm run in
 * test/integration/render-tools.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RendererFailedError, RendererLimitError } from '../../src/render/index.ts';
import { runTool, type ToolRun } from '../../src/render/run-tool.ts';
import { InterruptedError } from '../../src/errors.ts';
import { assertInterrupted } from '../harness/interrupted.ts';

const shell = (script: string, overrides: Partial<ToolRun> = {}): ToolRun => ({
  tool: 'kustomize build app',
  binary: '/bin/sh',
  args: ['-c', script],
  cwd: '/',
  env: { PATH: '/usr/bin:/bin' },
  timeoutMs: 10_000,
  maxOutputBytes: 1_000_000,
  ...overrides,
});

describe('runTool', () => {
  it('returns what the tool printed', async () => {
    const output = await runTool(shell('printf "kind: ConfigMap\\n"'));
    assert.equal(output.toString(), 'kind: ConfigMap\n');
  });

  it('stops a tool that runs past its time, with what it started', async () => {
    const started = performance.now();
    await assert.rejects(
      runTool(shell('sleep 30 & sleep 30', { timeoutMs: 300 })),
      (error: unknown) =>
        error instanceof RendererLimitError &&
        /^kustomize build app: did not finish within 300 ms$/.test(error.message),
    );
    assert.ok(performance.now() - started < 10_000, 'the whole process group was stopped');
  });

  it('stops a tool when asked to stop (the same kill as a timeout), with the InterruptedError', async () => {
    // Prepare
    const controller = new AbortController();
    const run = runTool(
      shell('sleep 30 & sleep 30', { timeoutMs: 60_000, signal: controller.signal }),
    );

    // Act
    setTimeout(() => controller.abort(new InterruptedError('interrupted by SIGINT')), 200);

    // Assess
    await assertInterrupted(run);
    await assert.rejects(
      runTool(shell('echo never', { signal: controller.signal })),
      InterruptedError,
      'a signal aborted before the tool starts stops it at once',
    );
  });

  it('stops a tool whose output passes the limit', async () => {
    await assert.rejects(
      runTool(shell('yes', { maxOutputBytes: 100_000 })),
      (error: unknown) =>
        error instanceof RendererLimitError &&
        /output exceeds the limit of 100000 bytes/.test(error.message),
    );
  });

  it('fails with the tool’s own message, rewritten by describe', async () => {
    await assert.rejects(
      runTool(
        shell('echo "Error: /tmp/xyz/repo/app/gone.yaml: no such file" >&2; exit 1', {
          describe: (text) => text.replaceAll('/tmp/xyz/repo/', ''),
        }),
      ),
      (error: unknown) =>
        error instanceof RendererFailedError &&
        error.message === 'kustomize build app: Error: app/gone.yaml: no such file',
    );
  });

  it('gives the tool only the environment it is handed (plus Go runtime settings)', async () => {
    process.env.DRIFTLESS_PLANTED_SECRET = 'must-not-leak';
    try {
      const output = await runTool(shell('env | sort'));
      const names = output
        .toString()
        .trim()
        .split('\n')
        .map((line) => line.slice(0, line.indexOf('=')))
        .filter((name) => !['PWD', 'SHLVL', '_'].includes(name));
      assert.deepEqual(names, ['GOGC', 'GOMEMLIMIT', 'PATH']);
    } finally {
      delete process.env.DRIFTLESS_PLANTED_SECRET;
    }
  });

  it('says when the binary cannot be run', async () => {
    await assert.rejects(
      runTool(shell('', { binary: '/nonexistent/helm', tool: 'helm template charts/web' })),
      (error: unknown) =>
        error instanceof RendererFailedError &&
        /^helm template charts\/web: cannot run \/nonexistent\/helm: /.test(error.message),
    );
  });
});

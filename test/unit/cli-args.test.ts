import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import type { OpenLocalContext } from '../../src/sync/local-context.ts';

/** Runs the CLI in-process; any attempt to open the config fails the test (nothing may be attempted). */
async function driftless(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string; opened: boolean }> {
  let stdout = '';
  let stderr = '';
  let opened = false;
  const openLocalContext: OpenLocalContext = async () => {
    opened = true;
    throw new Error('the context must not be opened on a usage error');
  };
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: {},
    openLocalContext,
  });
  return { code, stdout, stderr, opened };
}

describe('driftless command-line flags', () => {
  for (const [args, expected] of [
    [['sync', '--force'], /^driftless: sync: unknown flag --force$/m],
    [['status', '-x'], /^driftless: status: unknown flag -x$/m],
    [['render', '--track', 'web', '-o', 'json'], /render: unknown flag -o/],
    [['diff'], /diff: --track is required/],
    [['history', '-o', 'json'], /history: --track is required/],
    [['sync', '--track'], /sync: --track needs a value/],
    [['sync', '--track', '--revision', 'abc'], /sync: --track needs a value/],
    [['status', '-c'], /status: -c\/--config needs a value/],
    [['status', '-o', 'yaml'], /status: -o\/--output must be text or json, not "yaml"/],
    [['sync', '--revision', 'abc'], /sync: --revision needs --track/],
    [['rollback', '--track', 'web'], /rollback: give exactly one of --revision or --previous/],
    [
      ['rollback', '--track', 'web', '--revision', 'abc', '--previous'],
      /rollback: give exactly one of --revision or --previous/,
    ],
    [['rollback', '--track', 'web', '--previous=yes'], /rollback: --previous takes no value/],
    [['serve', '--port', '80a'], /serve: --port must be a TCP port \(1-65535\), not "80a"/],
    [['serve', '--port', '70000'], /serve: --port must be a TCP port/],
    [['status', '--track', 'a', '--track', 'b'], /status: --track is given more than once/],
    [['status', 'web'], /status: unexpected argument "web"/],
  ] as const) {
    it(`refuses "${args.join(' ')}" with exit code 2, naming the flag`, async () => {
      // Act
      const result = await driftless(...args);

      // Assess
      assert.equal(result.code, 2);
      assert.match(result.stderr, expected);
      assert.match(result.stderr, new RegExp(`^usage: driftless ${args[0]} `, 'm'));
      assert.equal(result.stdout, '');
      assert.equal(result.opened, false);
    });
  }

  it('accepts -o=json as people write it', async () => {
    // Act
    const result = await driftless('status', '-o=json');

    // Assess: the flags passed, so the context was opened (and refused by the stub).
    assert.equal(result.opened, true);
    assert.equal(result.code, 3);
  });

  it('prints a command usage for --help and exits 0', async () => {
    // Act
    const result = await driftless('diff', '--help');

    // Assess
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: driftless diff +\[-c FILE\] --track NAME/);
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));

/** Runs the CLI from source in a child process, as a user would. */
function driftless(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, ...args], (error, stdout, stderr) => {
      resolve({
        code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
        stdout,
        stderr,
      });
    });
  });
}

describe('the driftless command', () => {
  it('lists every command of the contract in --help and exits 0', async () => {
    // Act
    const result = await driftless('--help');

    // Assess
    assert.equal(result.code, 0);
    for (const command of [
      'sync',
      'diff',
      'drift',
      'rollback',
      'unpin',
      'history',
      'status',
      'render',
      'serve',
    ]) {
      assert.match(
        result.stdout,
        new RegExp(`driftless ${command} `),
        `--help does not list ${command}`,
      );
    }
  });

  it('rejects an unknown command with exit code 2 and says so on stderr', async () => {
    // Act
    const result = await driftless('deploy');

    // Assess
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown command "deploy"/);
    assert.equal(result.stdout, '');
  });
});

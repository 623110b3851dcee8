import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { Output } from '../../src/cli/output.ts';
import { serveCommandWith } from '../../src/cli/serve-command.ts';
import { parseConfig } from '../../src/config/index.ts';
import { createStore } from '../../src/store/create-store.ts';

describe('serve command', () => {
  it('serves until told to stop, logging JSON lines on stderr and nothing on stdout', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-serve-cmd-'));
    const store = createStore({ type: 'fs', path: join(dir, 'store') });
    const ctx: LocalContext = {
      config: parseConfig('webhooks:\n  github: {secret: env:GH}\n', 'driftless.yaml'),
      artifacts: store.artifacts,
      state: store.state,
      readSecret: async () => 'secret',
      source: () => Promise.reject(new Error('unused')),
      cluster: () => Promise.reject(new Error('unused')),
      close: () => undefined,
    };
    let stdout = '';
    let stderr = '';
    const output = new Output({
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
    });
    let healthz = 0;
    const command = serveCommandWith(async () => {
      // The server listens before the command waits: ask it while it runs.
      const { url } = JSON.parse(stderr.split('\n')[0]!) as { url: string };
      healthz = (await fetch(`${url}/healthz`)).status;
      return 'SIGTERM';
    });

    try {
      // Act
      const code = await command(
        ctx,
        {
          config: 'driftless.yaml',
          output: 'text',
          previous: false,
          detectOnly: false,
          objects: false,
          port: 0,
        },
        output,
      );

      // Assess
      assert.equal(code, 0);
      assert.equal(healthz, 200);
      assert.equal(stdout, '');
      const messages = stderr
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { msg: string }).msg);
      assert.deepEqual(messages, ['listening', 'stop requested', 'shutting down', 'stopped']);
      assert.doesNotMatch(stderr, /secret/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

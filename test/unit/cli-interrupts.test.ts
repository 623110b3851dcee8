/**
 * Ctrl-C and SIGTERM for commands that stop cleanly (src/cli/interrupts.ts):
 * the first signal aborts the command's signal with an InterruptedError and
 * says what happens next, the exit code becomes the signal's, and a second
 * signal quits at once. Signals come from an EventEmitter standing for the
 * process; runCli takes the same emitter.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { listenForInterrupts, onInterrupt, type SignalSource } from '../../src/cli/interrupts.ts';
import { runCli } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/cli/output.ts';
import { Output } from '../../src/cli/output.ts';
import { InterruptedError } from '../../src/errors.ts';
import { parseConfig } from '../../src/config/index.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

/** A process stand-in: emits signals, records exit codes. */
class FakeProcess extends EventEmitter implements SignalSource {
  readonly exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
}

function capturingOutput(): { output: Output; stderr: () => string } {
  let text = '';
  const io: CliIo = {
    stdout: { write: () => true },
    stderr: { write: (chunk: string) => (text += chunk) },
    env: {},
  };
  return { output: new Output(io), stderr: () => text };
}

describe('interrupts', () => {
  it('abort at the first signal, say so, and exit with the signal code', () => {
    // Prepare
    const source = new FakeProcess();
    const { output, stderr } = capturingOutput();
    const interrupts = listenForInterrupts(output, source);

    // Act
    const before = interrupts.exitCode(0);
    source.emit('SIGINT', 'SIGINT');

    // Assess
    assert.equal(before, 0);
    assert.equal(interrupts.signal.aborted, true);
    const reason: unknown = interrupts.signal.reason;
    assert.ok(reason instanceof InterruptedError);
    assert.equal(reason.message, 'interrupted by SIGINT');
    assert.match(stderr(), /^driftless: SIGINT: stopping — requests in flight finish/);
    assert.equal(interrupts.exitCode(0), 130);
    assert.equal(interrupts.exitCode(3), 130);
    assert.deepEqual(source.exits, []);
    interrupts.dispose();
  });

  it('quit at once at a second signal, with its code', () => {
    // Prepare
    const source = new FakeProcess();
    const firsts: string[] = [];
    onInterrupt((signal) => firsts.push(signal), source);

    // Act
    source.emit('SIGINT', 'SIGINT');
    source.emit('SIGTERM', 'SIGTERM');

    // Assess
    assert.deepEqual(firsts, ['SIGINT']);
    assert.deepEqual(source.exits, [143]);
  });

  it('leave the signals to Node once disposed', () => {
    // Prepare
    const source = new FakeProcess();
    const dispose = onInterrupt(() => undefined, source);
    source.emit('SIGTERM', 'SIGTERM');

    // Act
    dispose();

    // Assess
    assert.equal(source.listenerCount('SIGINT'), 0);
    assert.equal(source.listenerCount('SIGTERM'), 0);
  });

  it('reach the commands that stop cleanly through runCli, and no other', async () => {
    // Prepare: a context whose Git source is asked for while the command runs; the
    // interrupt arrives then, before any track is applied.
    const dir = await mkdtemp(join(tmpdir(), 'driftless-interrupts-'));
    const store = createStore({ type: 'fs', path: dir });
    const source = new FakeProcess();
    const listening: Record<string, number> = {};
    const context = (command: string): LocalContext => ({
      config: parseConfig(
        'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]',
        'driftless.yaml',
      ),
      artifacts: store.artifacts,
      state: store.state,
      source: async () => {
        listening[command] = source.listenerCount('SIGINT');
        source.emit('SIGINT', 'SIGINT');
        throw new Error('no Git here');
      },
      cluster: async () => new InMemoryCluster(),
      close: () => undefined,
    });
    const run = async (...args: string[]): Promise<{ code: number; stderr: string }> => {
      let stderr = '';
      const code = await runCli(args, {
        stdout: { write: () => true },
        stderr: { write: (chunk: string) => (stderr += chunk) },
        env: {},
        signals: source,
        openLocalContext: async () => context(args[0] ?? ''),
      });
      return { code, stderr };
    };

    try {
      // Act
      const sync = await run('sync', '--track', 'web', '-o', 'json');
      const afterSync = source.listenerCount('SIGINT');
      const render = await run('render', '--track', 'web');
      const unpin = await run('unpin', '--track', 'web');

      // Assess: sync listened, said it stops, and exits 130; render did not listen.
      assert.equal(listening['sync'], 1);
      assert.match(sync.stderr, /SIGINT: stopping/);
      assert.equal(sync.code, 130);
      assert.equal(afterSync, 0);
      assert.equal(listening['render'], 0);
      assert.equal(render.code, 3);
      // unpin syncs: it stops as sync does
      assert.equal(listening['unpin'], 1);
      assert.match(unpin.stderr, /SIGINT: stopping/);
      assert.equal(unpin.code, 130);
    } finally {
      store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A track's apply lease held by a process that is gone is free at once for a process that
 * sees the same process table (local-process.ts): a real child process stands for the
 * holder, killed with SIGKILL as `kill -9` would.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { currentProcess, isGoneHere, type ProcessIdentity } from '../../src/local-process.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { statusJson } from '../../src/sync/status-json.ts';
import {
  TrackBusyError,
  acquireApplyLease,
  readTrackState,
  updateTrackState,
} from '../../src/sync/track-state.ts';

const here = currentProcess();
const linuxOnly = { skip: here === undefined ? 'no /proc here: nothing is recorded' : false };

/** A process that waits until killed. */
function startHolder(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('the process holding a lease', linuxOnly, () => {
  let holder: ChildProcess;
  let identity: ProcessIdentity;

  before(() => {
    holder = startHolder();
    identity = { ...here!, pid: holder.pid!, host: 'somewhere' };
  });
  after(() => holder.kill('SIGKILL'));

  it('is gone only once its process has exited, and never when it is this process', async () => {
    // Act
    const whileRunning = isGoneHere(identity);
    await kill(holder);
    const afterKill = isGoneHere(identity);

    // Assess
    assert.equal(whileRunning, false);
    assert.equal(afterKill, true);
    assert.equal(isGoneHere(here), false);
    assert.equal(isGoneHere(undefined), false);
  });

  it('is never judged from another machine, boot or PID namespace, nor by a process group', async () => {
    // Prepare: the pid of a process that has exited.
    const exited = startHolder();
    await kill(exited);
    const dead = { ...here!, pid: exited.pid! };

    // Act
    const otherBoot = isGoneHere({ ...dead, boot: '00000000-0000-0000-0000-000000000000' });
    const otherNamespace = isGoneHere({ ...dead, pidNamespace: 'pid:[1]' });
    // 0 and negative numbers name process groups, which signal 0 would find.
    const groups = [0, -1, -exited.pid!].map((pid) => isGoneHere({ ...dead, pid }));

    // Assess
    assert.equal(isGoneHere(dead), true);
    assert.equal(otherBoot, false);
    assert.equal(otherNamespace, false);
    assert.deepEqual(groups, [false, false, false]);
  });
});

describe('a process in a Lambda sandbox', linuxOnly, () => {
  it('records no identity: a sandbox restored from a snapshot could share another one', async () => {
    // Act: a process with Lambda's environment variable asks for its identity.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "import('./src/local-process.ts').then((m) => console.log(JSON.stringify(m.currentProcess() ?? null)))",
      ],
      { env: { ...process.env, AWS_LAMBDA_FUNCTION_NAME: 'driftless-dev-apply' } },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    await once(child, 'close');

    // Assess
    assert.equal(stdout.trim(), 'null');
  });
});

describe('a lease of a killed process', linuxOnly, () => {
  let dir: string;
  let store: FsStore;
  const NOW = new Date();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-lease-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const leaseOf = async (track: string, holder: ProcessIdentity) =>
    updateTrackState(store, track, (state) => {
      state.applyLease = {
        holder: 'killed',
        until: new Date(NOW.getTime() + 300_000).toISOString(),
        since: NOW.toISOString(),
        job: 'sync',
        process: holder,
      };
    });

  it('is not busy and is taken over at once; a live one is, and says which process', async () => {
    // Prepare: one track held by a process since killed, one by a process still running.
    const killed = startHolder();
    const running = startHolder();
    try {
      await kill(killed);
      await leaseOf('killed', { ...here!, pid: killed.pid! });
      await leaseOf('running', { ...here!, pid: running.pid! });

      // Act
      const killedStatus = statusJson('killed', await readTrackState(store, 'killed'), NOW);
      const runningStatus = statusJson('running', await readTrackState(store, 'running'), NOW);
      await acquireApplyLease(store, 'killed', 'next', 60_000, NOW, 'sync');
      const refused = acquireApplyLease(store, 'running', 'next', 60_000, NOW, 'sync');

      // Assess
      await assert.rejects(refused, (error) => {
        assert.ok(error instanceof TrackBusyError);
        assert.match(error.message, new RegExp(`a sync since .*, pid ${running.pid} on `));
        return true;
      });
      const taken = (await readTrackState(store, 'killed')).applyLease;
      assert.equal(taken?.holder, 'next');
      assert.equal(taken?.process?.pid, process.pid);
      assert.equal(killedStatus.busy, null);
      assert.equal(runningStatus.busy?.pid, running.pid);
      assert.equal(runningStatus.busy?.host, here!.host);
    } finally {
      running.kill('SIGKILL');
    }
  });
});

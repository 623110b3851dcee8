import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job } from '../../src/sync/jobs.ts';
import { QueueClosedError, TrackQueue, type JobContext } from '../../src/serve/track-queue.ts';

/** A promise with its resolve function, to hold a job running until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const fetchJob = (track: string, extra: Partial<Job> = {}): Job =>
  ({ type: 'fetch', track, trigger: 'schedule', ...extra }) as Job;
const driftJob = (track: string): Job => ({ type: 'drift', track });
const syncJob = (track: string, revision: string): Job => ({
  type: 'sync',
  track,
  revision,
  resolvedAt: '2025-01-01T00:00:00.000Z',
  trigger: 'webhook',
});

describe('TrackQueue', () => {
  it('runs the jobs of one track one at a time, in order', async () => {
    // Prepare
    const events: string[] = [];
    let running = 0;
    const queue = new TrackQueue(async (job) => {
      running += 1;
      assert.equal(running, 1, 'two jobs of one track ran at once');
      events.push(`start ${job.type}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      events.push(`end ${job.type}`);
      running -= 1;
    });

    // Act
    await queue.enqueue(syncJob('web', 'a'.repeat(40)));
    await queue.enqueue(driftJob('web'));
    await queue.enqueue(syncJob('web', 'b'.repeat(40)));
    await queue.idle();

    // Assess
    assert.deepEqual(events, [
      'start sync',
      'end sync',
      'start drift',
      'end drift',
      'start sync',
      'end sync',
    ]);
  });

  it('runs different tracks in parallel, at most `concurrency` at once', async () => {
    // Prepare
    const gates = new Map<string, ReturnType<typeof gate>>();
    const started: string[] = [];
    const queue = new TrackQueue(
      async (job) => {
        started.push(job.track);
        const g = gate();
        gates.set(job.track, g);
        await g.promise;
      },
      { concurrency: 2 },
    );

    // Act
    for (const track of ['a', 'b', 'c']) await queue.enqueue(driftJob(track));
    await new Promise((resolve) => setImmediate(resolve));
    const first = [...started];
    gates.get('a')!.open();
    await new Promise((resolve) => setImmediate(resolve));
    const second = [...started];
    gates.get('b')!.open();
    gates.get('c')!.open();
    await queue.idle();

    // Assess
    assert.deepEqual(first, ['a', 'b']);
    assert.equal(queue.running, 0);
    assert.deepEqual(second, ['a', 'b', 'c']);
  });

  it('folds a waiting fetch into one, keeping the webhook trigger and the earliest arrival', async () => {
    // Prepare
    const hold = gate();
    const ran: { job: Job; context: JobContext }[] = [];
    const queue = new TrackQueue(async (job, context) => {
      ran.push({ job, context });
      if (ran.length === 1) await hold.promise;
    });
    await queue.enqueue(driftJob('web'));

    // Act
    await queue.enqueue(fetchJob('web', { trigger: 'webhook', deliveryId: 'd1' }), {
      receivedAt: 100,
    });
    await queue.enqueue(fetchJob('web', { trigger: 'webhook', deliveryId: 'd2' }), {
      receivedAt: 200,
    });
    await queue.enqueue(fetchJob('web'));
    const waiting = queue.length;
    hold.open();
    await queue.idle();

    // Assess
    assert.equal(waiting, 1);
    assert.equal(ran.length, 2);
    assert.deepEqual(ran[1], {
      job: { type: 'fetch', track: 'web', trigger: 'webhook', deliveryId: 'd2' },
      context: { receivedAt: 100 },
    });
  });

  it('never folds sync jobs, nor fetches of a named revision', async () => {
    // Prepare
    const hold = gate();
    const queue = new TrackQueue(async () => hold.promise);
    await queue.enqueue(driftJob('web'));

    // Act
    await queue.enqueue(syncJob('web', 'a'.repeat(40)));
    await queue.enqueue(syncJob('web', 'b'.repeat(40)));
    await queue.enqueue(fetchJob('web'));
    await queue.enqueue(fetchJob('web', { revision: 'v1.0.0' }));

    // Assess
    assert.equal(queue.length, 4);
    hold.open();
    await queue.idle();
  });

  it('keeps a lane going when a job throws, and reports the error', async () => {
    // Prepare
    const errors: string[] = [];
    const ran: string[] = [];
    const queue = new TrackQueue(
      async (job) => {
        ran.push(job.type);
        if (job.type === 'drift') throw new Error('boom');
      },
      { onError: (_job, error) => errors.push((error as Error).message) },
    );

    // Act
    await queue.enqueue(driftJob('web'));
    await queue.enqueue(fetchJob('web'));
    await queue.idle();

    // Assess
    assert.deepEqual(ran, ['drift', 'fetch']);
    assert.deepEqual(errors, ['boom']);
  });

  it('on close refuses new jobs, drops waiting ones and waits for running ones', async () => {
    // Prepare
    const hold = gate();
    let finished = false;
    const queue = new TrackQueue(async () => {
      await hold.promise;
      finished = true;
    });
    await queue.enqueue(driftJob('web'));
    await queue.enqueue(fetchJob('web'));

    // Act
    const closing = queue.close();
    const refused = queue.enqueue(driftJob('api'));
    hold.open();
    const { dropped } = await closing;

    // Assess
    await assert.rejects(refused, QueueClosedError);
    assert.equal(dropped, 1);
    assert.equal(finished, true, 'close resolved before the running job finished');
    assert.equal(queue.accepting, false);
  });
});

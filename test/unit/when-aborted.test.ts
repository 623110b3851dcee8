/**
 * whenAborted: the watch every request and wait puts on a job's signal. One
 * listener per signal, whatever the number of watches, and each watch called
 * once, in the order given, unless taken back.
 */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { untilInterrupted, untilSignalled, whenAborted } from '../../src/errors.ts';

describe('whenAborted', () => {
  it('puts one listener on the signal for any number of watches', () => {
    // Prepare
    const controller = new AbortController();

    // Act
    const stops = Array.from({ length: 200 }, () => whenAborted(controller.signal, () => {}));

    // Assess
    assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
    for (const stop of stops) stop();
  });

  it('calls each watch still held once, in order, when the signal aborts', () => {
    // Prepare
    const controller = new AbortController();
    const calls: string[] = [];
    whenAborted(controller.signal, () => calls.push('first'));
    const stopSecond = whenAborted(controller.signal, () => calls.push('second'));
    whenAborted(controller.signal, () => calls.push('third'));
    stopSecond();

    // Act
    controller.abort();
    controller.abort();

    // Assess
    assert.deepEqual(calls, ['first', 'third']);
  });

  it('calls the other watches when one throws, and throws its error on a later turn', () => {
    // Prepare: the later turn's task kept rather than run (it would fail the test runner).
    const controller = new AbortController();
    const calls: string[] = [];
    const later: (() => void)[] = [];
    whenAborted(controller.signal, () => {
      throw new Error('watch failed');
    });
    whenAborted(controller.signal, () => calls.push('after'));
    const { queueMicrotask: original } = globalThis;
    globalThis.queueMicrotask = (task) => later.push(task);

    // Act
    try {
      controller.abort();
    } finally {
      globalThis.queueMicrotask = original;
    }

    // Assess
    assert.deepEqual(calls, ['after']);
    assert.equal(later.length, 1);
    assert.throws(() => later[0]?.(), /watch failed/);
  });

  it('rejects untilInterrupted work with the interruption when the signal aborts', async () => {
    // Prepare
    const controller = new AbortController();
    const waiting = untilInterrupted(new Promise(() => {}), controller.signal);

    // Act
    controller.abort(new Error('SIGINT'));

    // Assess
    await assert.rejects(waiting, { name: 'InterruptedError', message: 'interrupted: SIGINT' });
  });

  it('takes the watch of untilSignalled back once its work settles', async () => {
    // Prepare: reasonOf runs only when the watch is called.
    const controller = new AbortController();
    const reasons: string[] = [];
    const reasonOf = (signal: AbortSignal): unknown => {
      reasons.push(String(signal.reason));
      return signal.reason;
    };

    // Act: settled work, then the job aborts.
    const value = await untilSignalled(Promise.resolve(7), controller.signal, reasonOf);
    const failed = await untilSignalled(
      Promise.reject(new Error('no')),
      controller.signal,
      reasonOf,
    ).catch((error: unknown) => error);
    controller.abort(new Error('later'));

    // Assess
    assert.equal(value, 7);
    assert.match(String(failed), /no/);
    assert.deepEqual(reasons, []);
  });
});

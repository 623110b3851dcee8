/**
 * The load test's observation of applies (test/harness/push-load.ts): the
 * writes the watch saw, grouped into one window per push of a track, and
 * the pairs of windows that overlap. Shown here to catch interleaved applies,
 * so a green load test means none were seen, not that none could be.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyWindows, overlappingWindows, type ObservedWrite } from '../harness/push-load.ts';

/** Writes in stream order from `[track, push]` pairs. */
function writes(...pairs: [string, number][]): ObservedWrite[] {
  return pairs.map(([track, push], seq) => ({
    seq,
    at: 1_000 + seq,
    type: 'MODIFIED',
    track,
    name: `${track}-cm-${seq}`,
    resourceVersion: String(100 + seq),
    push,
  }));
}

describe('apply windows from watched writes', () => {
  it('finds no overlap when each push of a track is written as one block', () => {
    // Prepare
    const seen = writes(['a', 1], ['a', 1], ['b', 1], ['a', 2], ['b', 1], ['a', 2], ['b', 3]);

    // Act
    const windows = applyWindows(seen);

    // Assess
    assert.deepEqual(
      windows.get('a')?.map((w) => [w.push, w.writes, w.firstSeq, w.lastSeq]),
      [
        [1, 2, 0, 1],
        [2, 2, 3, 5],
      ],
    );
    assert.deepEqual(
      windows.get('b')?.map((w) => w.push),
      [1, 3],
    );
    assert.deepEqual(overlappingWindows(windows), []);
  });

  it('reports two pushes of one track whose writes interleave', () => {
    // Prepare: push 2 of track a starts before push 1 has written its last object.
    const seen = writes(['a', 1], ['a', 2], ['b', 1], ['a', 1], ['a', 2]);

    // Act
    const pairs = overlappingWindows(applyWindows(seen));

    // Assess
    assert.deepEqual(
      pairs.map(([first, second]) => [first.track, first.push, second.push]),
      [['a', 1, 2]],
    );
  });

  it('reports a push written again after a later one', () => {
    // Prepare
    const seen = writes(['a', 1], ['a', 2], ['a', 1]);

    // Act
    const pairs = overlappingWindows(applyWindows(seen));

    // Assess
    assert.equal(pairs.length, 1);
  });
});

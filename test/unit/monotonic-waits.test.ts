/**
 * Waits count on the monotonic clock: the system's clock set forward while a
 * wait runs (it moved by ~40 s during a CI run here) neither ends a wait early
 * nor brings a track's deadline closer. Date.now is made to jump an hour.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it, mock } from 'node:test';
import { waitUntil } from '../../src/apply/wait.ts';
import { TrackDeadline } from '../../src/sync/track-cluster.ts';

/** Date.now an hour ahead from now on. */
function setClockForward(): void {
  const now = Date.now.bind(Date);
  mock.method(Date, 'now', () => now() + 3_600_000);
}

describe('waits when the system clock is set forward', () => {
  afterEach(() => mock.restoreAll());

  it('keeps polling until the thing is done, not timing out at the jump', async () => {
    // Prepare: done on the third poll; the clock jumps after the first.
    let polls = 0;
    const done = async (): Promise<boolean> => {
      polls++;
      if (polls === 1) setClockForward();
      return polls === 3;
    };

    // Act
    await waitUntil('the thing', done, 5_000, 10);

    // Assess
    assert.equal(polls, 3);
  });

  it("leaves a track's deadline where it was", () => {
    // Prepare
    const deadline = new TrackDeadline({ name: 'web', timeout: 60_000 }, 'sync', undefined);
    try {
      // Act
      setClockForward();

      // Assess
      assert.ok(deadline.msLeft() > 59_000, `${deadline.msLeft()} ms left`);
    } finally {
      deadline.dispose();
    }
  });
});

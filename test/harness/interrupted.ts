/**
 * The assertion every test of a cancelled call makes: the call fails with an
 * InterruptedError carrying the signal's message — stopped, not failed with an
 * error of its own (a request cancelled, a connection closed).
 */
import assert from 'node:assert/strict';
import { InterruptedError } from '../../src/errors.ts';

export async function assertInterrupted(
  call: Promise<unknown>,
  message = 'interrupted by SIGINT',
): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(error instanceof InterruptedError, String(error));
    assert.equal(error.message, message);
    return true;
  });
}

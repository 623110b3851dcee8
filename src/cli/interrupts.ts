/**
 * Ctrl-C (SIGINT) and SIGTERM.
 *
 * Why: a sync, rollback, drift check or delete holds its track's apply lease
 * while it works. Killed by Node's default handling, it left the lease to
 * expire on its own (twice the track's timeout plus a minute: 5 minutes by
 * default), and every sync, rollback or drift check of that track failed with
 * "another apply job runs" until then — what an on-call engineer who pressed
 * Ctrl-C on a slow rollback needs least. Those commands (`stopsCleanly` in
 * commands.ts) stop as `terraform apply` does instead: the first signal
 * aborts the command's AbortSignal (errors.ts InterruptedError), requests in
 * flight finish, nothing more is sent, the outcome so far is recorded in the
 * track's status and history and the lease given back; the exit code is then
 * 130 (SIGINT) or 143 (SIGTERM). A second signal quits at once. Every other
 * command holds nothing and keeps Node's default: it ends at once.
 */
import { InterruptedError } from '../errors.ts';
import { EXIT_INTERRUPTED } from './exit-codes.ts';
import type { Output } from './output.ts';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

type StopSignal = (typeof SIGNALS)[number];

/** The part of `process` this module uses; tests pass an EventEmitter with an `exit`. */
export interface SignalSource {
  on(event: StopSignal, listener: (signal: NodeJS.Signals) => void): unknown;
  once(event: StopSignal, listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: StopSignal, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

/**
 * Calls `first` at the first SIGINT or SIGTERM; at a second one the process
 * exits at once with that signal's code. Returns what stops listening (and
 * gives both signals back to Node's default handling).
 */
export function onInterrupt(
  first: (signal: StopSignal) => void,
  source: SignalSource = process,
): () => void {
  const quit = (signal: NodeJS.Signals): void =>
    source.exit(EXIT_INTERRUPTED[signal as StopSignal]);
  const onFirst = (signal: NodeJS.Signals): void => {
    for (const name of SIGNALS) source.off(name, onFirst);
    // Someone who presses Ctrl-C twice does not want to wait.
    for (const name of SIGNALS) source.once(name, quit);
    first(signal as StopSignal);
  };
  for (const name of SIGNALS) source.on(name, onFirst);
  return () => {
    for (const name of SIGNALS) {
      source.off(name, onFirst);
      source.off(name, quit);
    }
  };
}

/** A command's interruption: its signal, and the exit code it ends with. */
export interface Interrupts {
  /** Aborted with an InterruptedError at the first SIGINT or SIGTERM. */
  readonly signal: AbortSignal;
  /** 130 after SIGINT, 143 after SIGTERM; else the command's own `code`. */
  exitCode(code: number): number;
  /** Stops listening. */
  dispose(): void;
}

/** Listens for the signals for as long as a command that stops cleanly runs. */
export function listenForInterrupts(output: Output, source: SignalSource = process): Interrupts {
  const controller = new AbortController();
  let received: StopSignal | undefined;
  const dispose = onInterrupt((signal) => {
    received = signal;
    output.log(
      `driftless: ${signal}: stopping — requests in flight finish, nothing more is sent, and ` +
        `the track's status and history record where it stopped. Press Ctrl-C again to quit ` +
        `at once (a track being applied then stays locked until its lease expires, except to ` +
        `the next driftless command on this machine).`,
    );
    controller.abort(new InterruptedError(`interrupted by ${signal}`));
  }, source);
  return {
    signal: controller.signal,
    exitCode: (code) => (received === undefined ? code : EXIT_INTERRUPTED[received]),
    dispose,
  };
}

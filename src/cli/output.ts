/**
 * Where the CLI writes: results on stdout (exactly one JSON document with
 * `-o json`), everything for people watching — logs, progress — on stderr.
 * Every line passes through the secret redactor (src/redact.ts).
 */
import type { Environment } from '../config/env.ts';
import { redactSecrets } from '../redact.ts';
import { colourWanted, palette, type Palette } from './colours.ts';

/** The part of a stream the CLI uses; process.stdout and test doubles both fit. */
export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** The process's streams and environment, injected so tests can capture them. */
export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly env: Environment;
}

/** A progress line on stderr, redrawn in place. */
export interface Progress {
  update(done: number, total: number): void;
  /** Clears the line. */
  end(): void;
}

export class Output {
  /** Styles for stdout. */
  readonly colours: Palette;

  constructor(private readonly io: CliIo) {
    this.colours = palette(colourWanted(io.stdout, io.env));
  }

  /** A line (or block) of the result, on stdout. */
  print(text: string): void {
    this.io.stdout.write(redactSecrets(text.endsWith('\n') ? text : `${text}\n`));
  }

  /** The result as one JSON document on stdout. */
  json(value: unknown): void {
    this.io.stdout.write(redactSecrets(`${JSON.stringify(value, null, 2)}\n`));
  }

  /** A message for people, on stderr, so it never mixes into a JSON result. */
  log(text: string): void {
    this.io.stderr.write(redactSecrets(`${text}\n`));
  }

  /** A progress line, shown only when stderr is a terminal (logs and CI get none). */
  progress(label: string): Progress {
    const stderr = this.io.stderr;
    if (stderr.isTTY !== true) return { update: () => undefined, end: () => undefined };
    let shown = false;
    return {
      update(done, total) {
        stderr.write(`\r\u001b[K${label} ${done}/${total}`);
        shown = true;
      },
      end() {
        if (shown) stderr.write('\r\u001b[K');
        shown = false;
      },
    };
  }
}

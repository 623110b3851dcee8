import { readOptionalEnv, type Environment } from '../config/env.ts';

/** ANSI styles; each returns the text unchanged when colour is off. */
export interface Palette {
  readonly enabled: boolean;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

const ESC = '\u001b[';

function style(enabled: boolean, open: number, close: number): (text: string) => string {
  return enabled ? (text) => `${ESC}${open}m${text}${ESC}${close}m` : (text) => text;
}

/** A palette that colours when `enabled`. */
export function palette(enabled: boolean): Palette {
  return {
    enabled,
    red: style(enabled, 31, 39),
    green: style(enabled, 32, 39),
    yellow: style(enabled, 33, 39),
    cyan: style(enabled, 36, 39),
    magenta: style(enabled, 35, 39),
    dim: style(enabled, 2, 22),
    bold: style(enabled, 1, 22),
  };
}

/** Colour only for a person at a terminal, and never when NO_COLOR is set (no-color.org). */
export function colourWanted(stream: { readonly isTTY?: boolean }, env: Environment): boolean {
  return stream.isTTY === true && readOptionalEnv('NO_COLOR', env) === undefined;
}

// Built from a string: a regex literal with the escape character trips no-control-regex.
const ANSI_SEQUENCE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/** The text without ANSI colour sequences: what a terminal shows, for measuring widths. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, '');
}

/**
 * Why a request body is not JSON, said without quoting it. `JSON.parse`'s
 * own message often holds the text (`Unexpected token 'o', "nope" is not
 * valid JSON`), and request answers and their log lines must not carry what
 * a stranger sent: a token pasted in the wrong place, or anything at all.
 * Used by the webhook receivers and the dashboard's actions.
 */

/** V8's message for a body cut short, which has no position to give. */
const END_OF_INPUT = /^Unexpected end of JSON input/;

/** V8's messages that name the offending character itself, with the text instead of a position. */
const UNEXPECTED_TOKEN = /^Unexpected token/;

/**
 * Where `text` stops being JSON, for a message: `syntax error at position 7`
 * or `it ends before the JSON value does`; `error` is what `JSON.parse(text)`
 * threw. Positions count UTF-16 units from 0, as `JSON.parse`'s do.
 */
export function jsonSyntaxProblem(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const cutShort = 'it ends before the JSON value does';
  if (END_OF_INPUT.test(message)) return cutShort;
  const stated = /\bat position (\d+)/.exec(message);
  const position =
    stated !== null
      ? Number(stated[1])
      : UNEXPECTED_TOKEN.test(message)
        ? unexpectedTokenAt(text)
        : undefined;
  if (position === undefined) return 'syntax error';
  // An unterminated string or object is reported at the end: the body was cut short.
  return position >= text.length ? cutShort : `syntax error at position ${position}`;
}

/**
 * The position of the character V8 calls an unexpected token. It names none, so this finds the
 * shortest prefix that already fails that way: the parser reads left to right, so every longer
 * prefix fails there too, and a shorter one is only cut short (another error, or none).
 * About 20 parses of a body of 1 MiB; only ever for a body that was refused.
 */
function unexpectedTokenAt(text: string): number | undefined {
  const failsHere = (length: number): boolean => {
    try {
      JSON.parse(text.slice(0, length));
      return false;
    } catch (error) {
      return error instanceof Error && UNEXPECTED_TOKEN.test(error.message);
    }
  };
  if (!failsHere(text.length)) return undefined;
  let low = 1;
  let high = text.length;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (failsHere(middle)) high = middle;
    else low = middle + 1;
  }
  return low - 1;
}

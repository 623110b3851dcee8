const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/**
 * Parses a Go-style duration (`30s`, `5m`, `1h30m`, `1.5h`, `500ms`) into
 * milliseconds, or `undefined` when the text is not one.
 *
 * Go's notation because Flux and Argo CD users write intervals that way; a
 * bare number is refused since its unit would be a guess.
 */
export function parseDuration(text: string): number | undefined {
  if (!WHOLE.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) {
    total += Number(amount) * (UNIT_MS[unit ?? ''] ?? Number.NaN);
  }
  return Number.isFinite(total) ? Math.round(total) : undefined;
}

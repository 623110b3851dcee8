/**
 * A cheap, deliberately forgiving comparison of a manifest value with the
 * live one, used only to pick suspects: the server stores `cpu: 1000m` as
 * `1`, `0.5` as `500m` and `1024Mi` as `1Gi`. Anything it lets through that is
 * a real change also moves field ownership, which the suspect check sees; and
 * every suspect is confirmed against the server's own normalisation.
 */
import { isPlainObject } from './field-set.ts';

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

const SUFFIX: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/** The numeric value of a Kubernetes quantity (or a plain number), or undefined. */
export function quantityValue(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = QUANTITY.exec(value.trim());
  if (!match) return undefined;
  const base = Number(match[1]);
  const suffix = match[2];
  if (suffix === undefined) return base;
  const factor = SUFFIX[suffix];
  return factor === undefined ? base * 10 ** Number(suffix.slice(1)) : base * factor;
}

/** Scalars equal as written, or as numbers/quantities (`"1000m"` and `"1"`, `"80"` and `80`). */
export function looseScalarEqual(desired: unknown, live: unknown): boolean {
  if (desired === live) return true;
  const a = quantityValue(desired);
  const b = quantityValue(live);
  if (a === undefined || b === undefined) return false;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/**
 * True when `live` holds everything `desired` says: object keys of `desired`
 * present and loosely equal (extra live keys are defaults), lists of the same
 * length with loosely equal elements.
 */
export function looseContains(desired: unknown, live: unknown): boolean {
  if (Array.isArray(desired)) {
    return (
      Array.isArray(live) &&
      desired.length === live.length &&
      desired.every((element, i) => looseContains(element, live[i]))
    );
  }
  if (isPlainObject(desired)) {
    return (
      isPlainObject(live) &&
      Object.entries(desired).every(
        ([key, value]) => value === null || looseContains(value, live[key]),
      )
    );
  }
  return looseScalarEqual(desired, live);
}

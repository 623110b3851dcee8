/**
 * Secret values that must never be written anywhere: SOPS-decrypted values and
 * `substituteFrom` variables. The apply step learns them when it resolves a
 * revision (sync/resolve-secrets.ts) and adds them here; everything that
 * leaves the process — status and history messages, log lines, command
 * output — passes through {@link redactSecrets} first.
 *
 * Structural masking (a Secret's `data`/`stringData`, apply/mask-secret.ts)
 * covers the expected places; this covers the unexpected ones: an API
 * server's error quoting a rejected value, a substituted password in a
 * ConfigMap's drift patch, a renderer's message.
 *
 * Why one process-wide set: a value must be hidden from every output of the
 * process once known, whichever code path prints it, and passing a redactor
 * through every function that may print would miss one. It only grows: a
 * value that stopped being secret still looks like one.
 *
 * Values shorter than {@link MIN_REDACTED_LENGTH} are not searched for in
 * free text — hiding every `1` or `on` would garble all output and tell an
 * attacker which short word is the secret. They are still masked wherever
 * they sit in a Secret.
 */

/** Shorter values are only masked structurally; see the module comment. */
export const MIN_REDACTED_LENGTH = 4;

/** What a secret value is replaced with. */
export const REDACTED = '***';

const known = new Set<string>();
let pattern: RegExp | undefined;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The forms a value may be printed in: as is, base64 (Secret data), JSON-escaped (a serialized object). */
function formsOf(value: string): string[] {
  const forms = [value, Buffer.from(value).toString('base64')];
  const json = JSON.stringify(value).slice(1, -1);
  if (json !== value) forms.push(json);
  return forms;
}

/** Adds secret values to hide from now on. */
export function addSecretValues(values: Iterable<string>): void {
  let added = false;
  for (const value of values) {
    for (const form of formsOf(value)) {
      if (form.length >= MIN_REDACTED_LENGTH && !known.has(form)) {
        known.add(form);
        added = true;
      }
    }
  }
  if (added) {
    // Longest first, so a value containing another is hidden whole.
    const alternatives = [...known].sort((a, b) => b.length - a.length).map(escapeRegExp);
    pattern = new RegExp(alternatives.join('|'), 'g');
  }
}

/** `text` with every known secret value replaced by {@link REDACTED}. */
export function redactSecrets(text: string): string {
  if (pattern === undefined) return text;
  return text.replace(pattern, REDACTED);
}

/** Whether `text` holds a known secret value (in any of its forms). */
export function holdsSecretValue(text: string): boolean {
  if (pattern === undefined) return false;
  pattern.lastIndex = 0;
  const found = pattern.test(text);
  pattern.lastIndex = 0;
  return found;
}

/** A copy of JSON-like data with every string redacted; the same value when nothing is known. */
export function redactDeep<T>(value: T): T {
  if (pattern === undefined) return value;
  return walk(value) as T;
}

function walk(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.map(walk);
  if (value instanceof Error) return value;
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[redactSecrets(key)] = walk(item);
    return copy;
  }
  return value;
}

/**
 * A copy of `value` with {@link REDACTED} wherever `reference` holds a known secret value at the
 * same place: the other side of a comparison (a diff's live object, a drift patch's test), whose
 * value there is an earlier secret — rotated since, so no longer known — or the same one.
 */
export function redactAlongside<T>(value: T, reference: unknown): T {
  if (pattern === undefined) return value;
  return alongside(value, reference) as T;
}

function alongside(value: unknown, reference: unknown): unknown {
  if (typeof reference === 'string') {
    return value !== undefined && holdsSecretValue(reference) ? REDACTED : value;
  }
  if (Array.isArray(value) && Array.isArray(reference)) {
    // Lists of named items (env, containers, ports) pair by name, as Kubernetes merges them:
    // an item added before another moves it, and the old value must still meet its new one.
    const named = byName(reference);
    return value.map((item, index) =>
      alongside(item, named === undefined ? reference[index] : named.get(nameOf(item))),
    );
  }
  if (isRecord(value) && isRecord(reference)) {
    const copy: Record<string, unknown> = { ...value };
    for (const [key, item] of Object.entries(value)) copy[key] = alongside(item, reference[key]);
    return copy;
  }
  return value;
}

function nameOf(item: unknown): unknown {
  return isRecord(item) ? item['name'] : undefined;
}

/** The items of `list` by their `name`, when every one has a string name. */
function byName(list: readonly unknown[]): Map<unknown, unknown> | undefined {
  if (list.length === 0 || !list.every((item) => typeof nameOf(item) === 'string'))
    return undefined;
  return new Map(list.map((item) => [nameOf(item), item]));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Forgets every value: for tests only. */
export function forgetSecretValuesForTests(): void {
  known.clear();
  pattern = undefined;
}

/** `error` with known secret values taken out of its message and stack, for errors that may quote a value. */
export function redactError<T>(error: T): T {
  if (pattern === undefined || !(error instanceof Error)) return error;
  error.message = redactSecrets(error.message);
  if (error.stack !== undefined) error.stack = redactSecrets(error.stack);
  return error;
}

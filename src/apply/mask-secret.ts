/**
 * Secret values as people may see them: masked, with a digest so that a
 * change still shows (`driftless diff`, drift reports).
 *
 * The digest is an HMAC under a key made fresh for each process, cut to 12
 * hex digits: two masks in one command's output (a diff's live and desired
 * sides, one drift report) are equal exactly when the values are, but a mask
 * cannot be looked up or brute-forced offline — a plain hash of a short
 * password could be. Masks of different processes are not comparable, on
 * purpose.
 *
 * Masked: a core/v1 Secret's `data` and `stringData` values (the digest is
 * of the decoded value, so `data` and `stringData` of the same value match),
 * and the same fields inside its `kubectl.kubernetes.io/last-applied-
 * configuration` annotation, which kubectl fills with the whole object.
 * `managedFields` name fields, never values, and need nothing.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PROCESS_KEY = randomBytes(32);
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type JsonMap = Record<string, unknown>;

function isMap(value: unknown): value is JsonMap {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The mask of one (decoded) Secret value. */
export function maskValue(value: string | Buffer): string {
  const digest = createHmac('sha256', PROCESS_KEY).update(value).digest('hex').slice(0, 12);
  return `*** (hmac:${digest})`;
}

/** The mask of a `data` value (base64). */
export function maskDataValue(value: unknown): string {
  return maskValue(typeof value === 'string' ? Buffer.from(value, 'base64') : String(value));
}

/** Whether `object` is a core/v1 Secret. */
export function isCoreSecret(object: unknown): boolean {
  return isMap(object) && object.apiVersion === 'v1' && object.kind === 'Secret';
}

function maskFields(object: JsonMap): JsonMap {
  const copy: JsonMap = { ...object };
  if (isMap(object.data)) {
    copy.data = Object.fromEntries(
      Object.entries(object.data).map(([key, value]) => [key, maskDataValue(value)]),
    );
  }
  if (isMap(object.stringData)) {
    copy.stringData = Object.fromEntries(
      Object.entries(object.stringData).map(([key, value]) => [key, maskValue(String(value))]),
    );
  }
  return copy;
}

/** A copy of `object` with its Secret values masked; any other object as it is. */
export function maskSecret<T>(object: T): T {
  if (!isCoreSecret(object)) return object;
  const masked = maskFields(object as JsonMap);
  const metadata = (object as JsonMap).metadata;
  const annotations = isMap(metadata) ? metadata.annotations : undefined;
  if (isMap(metadata) && isMap(annotations) && typeof annotations[LAST_APPLIED] === 'string') {
    let lastApplied: string;
    try {
      const parsed: unknown = JSON.parse(annotations[LAST_APPLIED]);
      lastApplied = isMap(parsed)
        ? JSON.stringify(maskFields(parsed))
        : maskValue(annotations[LAST_APPLIED]);
    } catch {
      lastApplied = maskValue(annotations[LAST_APPLIED]);
    }
    masked.metadata = { ...metadata, annotations: { ...annotations, [LAST_APPLIED]: lastApplied } };
  }
  return masked as T;
}

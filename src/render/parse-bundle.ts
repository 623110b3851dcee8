/**
 * Reading a stored bundle back (parseBundle). Its shape is checked by hand
 * rather than with a zod schema as driftless.yaml is: every sync, drift
 * check and rollback reads a bundle, and in a fresh process (the CLI, a cold
 * function) zod took 8-11 ms for 500 objects where this takes about one
 * (`npm run bench -- cli-process`). test/unit/render-bundle.test.ts keeps the
 * zod schema this replaced as its oracle on random alterations.
 */
import { joinApiVersion } from './api-version.ts';
import { bundleDigest } from './bundle-digest.ts';
import { isCanonicalJson } from './canonical-json.ts';
import { InvalidBundleError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import { compareObjectKeys, objectIdentity } from './object-order.ts';
import { BUNDLE_FORMAT } from './serialize-bundle.ts';
import { formatSubject } from './subject.ts';
import type { RenderedBundle, RenderedObject } from './types.ts';

/** The stored document as serializeBundle writes it: a bundle with its format. */
type StoredBundle = RenderedBundle & { readonly format: string; readonly substituted?: true };

const ENCRYPTED_FORMATS: ReadonlySet<unknown> = new Set(['yaml', 'json', 'dotenv', 'binary']);

function shapeError(path: string, message: string): never {
  throw new InvalidBundleError(`bundle has an unexpected shape: ${path || '/'}: ${message}`);
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value;
}

/** `value` as an object holding `required` keys, maybe `optional` ones, and nothing else. */
function strictRecord(
  value: unknown,
  path: string,
  required: readonly string[],
  optional: readonly string[] = [],
): Record<string, unknown> {
  if (!isJsonObject(value)) shapeError(path, `expected an object, got ${describe(value)}`);
  for (const key of required) {
    if (value[key] === undefined) shapeError(`${path}/${key}`, 'missing');
  }
  for (const key of Object.keys(value)) {
    if (!required.includes(key) && !optional.includes(key)) {
      shapeError(path, `unexpected field ${JSON.stringify(key)}`);
    }
  }
  return value;
}

function checkString(value: unknown, path: string, { empty = false } = {}): void {
  if (typeof value !== 'string') shapeError(path, `expected a string, got ${describe(value)}`);
  if (!empty && value === '') shapeError(path, 'expected a non-empty string');
}

function checkList(value: unknown, path: string): readonly unknown[] {
  if (!Array.isArray(value)) shapeError(path, `expected a list, got ${describe(value)}`);
  return value;
}

function checkObject(value: unknown, path: string): void {
  const object = strictRecord(
    value,
    path,
    ['group', 'version', 'kind', 'name', 'subject', 'source', 'manifest'],
    ['namespace'],
  );
  checkString(object.group, `${path}/group`, { empty: true });
  for (const key of ['version', 'kind', 'name', 'subject'] as const) {
    checkString(object[key], `${path}/${key}`);
  }
  if (object.namespace !== undefined) checkString(object.namespace, `${path}/namespace`);
  const source = strictRecord(object.source, `${path}/source`, ['file', 'line']);
  checkString(source.file, `${path}/source/file`);
  if (!Number.isSafeInteger(source.line) || (source.line as number) < 1) {
    shapeError(`${path}/source/line`, 'expected a positive integer');
  }
  if (!isJsonObject(object.manifest)) {
    shapeError(`${path}/manifest`, `expected an object, got ${describe(object.manifest)}`);
  }
}

/** Checks the document's shape field by field; the first problem is thrown, with its path. */
function checkShape(data: unknown): asserts data is StoredBundle {
  const bundle = strictRecord(
    data,
    '',
    ['format', 'objects'],
    ['capabilities', 'skipped', 'encryptedSources', 'substituted'],
  );
  if (bundle.format !== BUNDLE_FORMAT) {
    shapeError('/format', `expected ${JSON.stringify(BUNDLE_FORMAT)}`);
  }
  if (bundle.capabilities !== undefined) checkString(bundle.capabilities, '/capabilities');
  checkList(bundle.objects, '/objects').forEach((object, index) =>
    checkObject(object, `/objects/${index}`),
  );
  if (bundle.skipped !== undefined) {
    checkList(bundle.skipped, '/skipped').forEach((entry, index) => {
      const at = `/skipped/${index}`;
      const skipped = strictRecord(entry, at, ['file', 'reason']);
      checkString(skipped.file, `${at}/file`);
      checkString(skipped.reason, `${at}/reason`);
    });
  }
  if (bundle.encryptedSources !== undefined) {
    checkList(bundle.encryptedSources, '/encryptedSources').forEach((entry, index) => {
      const at = `/encryptedSources/${index}`;
      const source = strictRecord(entry, at, ['path', 'format', 'content']);
      checkString(source.path, `${at}/path`);
      if (!ENCRYPTED_FORMATS.has(source.format)) {
        shapeError(`${at}/format`, 'expected one of yaml, json, dotenv, binary');
      }
      checkString(source.content, `${at}/content`);
    });
  }
  if (bundle.substituted !== undefined && bundle.substituted !== true) {
    shapeError('/substituted', 'expected true');
  }
}

/**
 * Whether `text` is what serializeBundle writes for `data` (whose shape is
 * checked): objects in canonical order, no empty optional list, canonical
 * JSON. canonicalJson(data) is then serializeBundle's output, key for key.
 */
function isCanonicalBundle(data: StoredBundle, text: string): boolean {
  for (let index = 1; index < data.objects.length; index++) {
    const [previous, next] = [data.objects[index - 1], data.objects[index]] as const;
    if (previous && next && compareObjectKeys(previous, next) > 0) return false;
  }
  if (data.skipped?.length === 0 || data.encryptedSources?.length === 0) return false;
  return isCanonicalJson(data, text);
}

/** Checks that an object's fields say the same as its manifest, so neither can be altered alone. */
function checkConsistent(object: RenderedObject, index: number): void {
  const fail = (reason: string): never => {
    throw new InvalidBundleError(`bundle object ${index} (${object.subject}): ${reason}`);
  };
  const { manifest } = object;
  const metadata = manifest.metadata;
  if (manifest.apiVersion !== joinApiVersion(object.group, object.version)) {
    fail('manifest apiVersion does not match group and version');
  }
  if (manifest.kind !== object.kind) fail('manifest kind does not match');
  if (!isJsonObject(metadata)) return fail('manifest has no metadata');
  if (metadata.name !== object.name) fail('manifest metadata.name does not match');
  if (metadata.namespace !== object.namespace) fail('manifest metadata.namespace does not match');
  if (object.subject !== formatSubject(object.kind, object.name, object.namespace)) {
    fail('subject does not match kind, namespace and name');
  }
}

/**
 * Reads bundle bytes back (e.g. an artifact fetched from S3), treating them
 * as untrusted: they must be UTF-8 JSON of the expected shape, each object
 * consistent with its manifest, without duplicates, and in canonical form
 * (re-serializing gives the very same bytes). When `expectedDigest` is given,
 * the bytes must also hash to it.
 */
export function parseBundle(bytes: Uint8Array, expectedDigest?: string): RenderedBundle {
  if (expectedDigest !== undefined) {
    const actual = bundleDigest(bytes);
    if (actual !== expectedDigest) {
      throw new InvalidBundleError(`bundle digest is ${actual}, expected ${expectedDigest}`);
    }
  }
  let text: string;
  let data: unknown;
  try {
    // The BOM kept: bytes that differ must not decode to the same text.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    data = JSON.parse(text);
  } catch (error) {
    throw new InvalidBundleError('bundle is not UTF-8 JSON', { cause: error });
  }
  checkShape(data);
  const seen = new Set<string>();
  data.objects.forEach((object, index) => {
    checkConsistent(object, index);
    const identity = objectIdentity(object);
    if (seen.has(identity)) throw new InvalidBundleError(`bundle lists ${object.subject} twice`);
    seen.add(identity);
  });
  if (!isCanonicalBundle(data, text)) {
    throw new InvalidBundleError(
      'bundle is not in canonical form (altered or not written by serializeBundle)',
    );
  }
  // Checked field by field, with nothing else in them: the parsed objects and lists are the bundle's.
  const { objects, capabilities, skipped, encryptedSources, substituted } = data;
  return {
    objects,
    ...(capabilities === undefined ? {} : { capabilities }),
    ...(skipped === undefined ? {} : { skipped }),
    ...(encryptedSources === undefined ? {} : { encryptedSources }),
    ...(substituted === undefined ? {} : { substituted }),
  };
}

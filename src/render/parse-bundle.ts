import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { joinApiVersion } from './api-version.ts';
import { bundleDigest } from './bundle-digest.ts';
import { InvalidBundleError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import { objectIdentity } from './object-order.ts';
import { BUNDLE_FORMAT, serializeBundle } from './serialize-bundle.ts';
import { formatSubject } from './subject.ts';
import type { JsonObject, RenderedBundle, RenderedObject } from './types.ts';

const nonEmpty = z.string().check(z.minLength(1));

const objectSchema = z.strictObject({
  group: z.string(),
  version: nonEmpty,
  kind: nonEmpty,
  name: nonEmpty,
  namespace: z.optional(nonEmpty),
  subject: nonEmpty,
  source: z.strictObject({ file: nonEmpty, line: z.int().check(z.positive()) }),
  // Only "an object": its fields are checked against the object's identity below, and a
  // record schema walking every key of 500 manifests cost more than the rest of the parse.
  manifest: z.custom<JsonObject>(isJsonObject, 'expected an object'),
});

const bundleSchema = z.strictObject({
  format: z.literal(BUNDLE_FORMAT),
  capabilities: z.optional(nonEmpty),
  objects: z.array(objectSchema),
  skipped: z.optional(z.array(z.strictObject({ file: nonEmpty, reason: nonEmpty }))),
  encryptedSources: z.optional(
    z.array(
      z.strictObject({
        path: nonEmpty,
        format: z.enum(['yaml', 'json', 'dotenv', 'binary']),
        content: nonEmpty,
      }),
    ),
  ),
  substituted: z.optional(z.literal(true)),
});

/** zod/mini has no messages of its own; these are the ones classic zod gave. */
const MESSAGES = { error: en().localeError };

type ParsedObject = z.infer<typeof objectSchema>;

/** Checks that an object's fields say the same as its manifest, so neither can be altered alone. */
function checkConsistent(object: ParsedObject, index: number): void {
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
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw new InvalidBundleError('bundle is not UTF-8 JSON', { cause: error });
  }
  const parsed = bundleSchema.safeParse(data, MESSAGES);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : `/${issue.path.join('/')}: `;
    throw new InvalidBundleError(
      `bundle has an unexpected shape: ${where}${issue?.message ?? ''}`,
      {
        cause: parsed.error,
      },
    );
  }
  const seen = new Set<string>();
  const objects: RenderedObject[] = parsed.data.objects.map((object, index) => {
    checkConsistent(object, index);
    const identity = objectIdentity(object);
    if (seen.has(identity)) throw new InvalidBundleError(`bundle lists ${object.subject} twice`);
    seen.add(identity);
    const { namespace, ...rest } = object;
    return {
      ...rest,
      manifest: object.manifest as JsonObject,
      ...(namespace === undefined ? {} : { namespace }),
    };
  });
  const { capabilities, skipped, encryptedSources, substituted } = parsed.data;
  const bundle: RenderedBundle = {
    objects,
    ...(capabilities === undefined ? {} : { capabilities }),
    ...(skipped === undefined ? {} : { skipped }),
    ...(encryptedSources === undefined ? {} : { encryptedSources }),
    ...(substituted === undefined ? {} : { substituted }),
  };
  const canonical = serializeBundle(bundle);
  if (
    Buffer.compare(
      Buffer.from(canonical),
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    ) !== 0
  ) {
    throw new InvalidBundleError(
      'bundle is not in canonical form (altered or not written by serializeBundle)',
    );
  }
  return bundle;
}

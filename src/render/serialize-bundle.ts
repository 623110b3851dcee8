import { canonicalJson } from './canonical-json.ts';
import { compareObjectKeys } from './object-order.ts';
import type { RenderedBundle } from './types.ts';

/** Identifies the serialized form, so a future format can be told apart and refused. */
export const BUNDLE_FORMAT = 'driftless.dev/rendered-bundle/v1';

/**
 * The canonical bytes of a bundle (UTF-8 JSON, objects in group/kind/namespace/name
 * order, keys sorted, no whitespace): the same objects always give the same
 * bytes, hence the same digest. This is the artifact stored per revision.
 */
export function serializeBundle(bundle: RenderedBundle): Uint8Array {
  const objects = [...bundle.objects].sort(compareObjectKeys).map((object) => ({
    group: object.group,
    version: object.version,
    kind: object.kind,
    name: object.name,
    ...(object.namespace === undefined ? {} : { namespace: object.namespace }),
    subject: object.subject,
    source: { file: object.source.file, line: object.source.line },
    manifest: object.manifest,
  }));
  const capabilities =
    bundle.capabilities === undefined ? {} : { capabilities: bundle.capabilities };
  const skipped =
    bundle.skipped === undefined || bundle.skipped.length === 0
      ? {}
      : { skipped: bundle.skipped.map(({ file, reason }) => ({ file, reason })) };
  const encryptedSources =
    bundle.encryptedSources === undefined || bundle.encryptedSources.length === 0
      ? {}
      : {
          encryptedSources: bundle.encryptedSources.map(({ path, format, content }) => ({
            path,
            format,
            content,
          })),
        };
  const substituted = bundle.substituted === true ? { substituted: true } : {};
  return new TextEncoder().encode(
    canonicalJson({
      format: BUNDLE_FORMAT,
      ...capabilities,
      ...encryptedSources,
      objects,
      ...skipped,
      ...substituted,
    }),
  );
}

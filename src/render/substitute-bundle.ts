/**
 * Post-build variable substitution over a whole bundle, and when it happens.
 *
 * Like Flux's `postBuild`, substitution runs only on tracks that ask for it
 * (`substitute:` or `substituteFrom:`), after the renderer and after SOPS
 * decryption. Where:
 *
 * - at render time (fetch step) when every variable is known there: the
 *   track has `substitute:` only and the revision holds no SOPS values. The
 *   artifact, `driftless render` and the status show the result, and a
 *   missing variable fails the fetch;
 * - otherwise in the apply step, after decryption, with the `substituteFrom`
 *   secrets — whose values are never stored — and `substitute:` on top
 *   (`substitute:` wins, as in Flux).
 *
 * A bundle records which happened (`substituted`), so a stored revision is
 * never substituted twice (`$${VAR}` would expand the second time).
 */
import type { Track } from '../config/types.ts';
import { rebuildBundle } from './render-manifests.ts';
import { substituteVariables, type Variables } from './substitute-variables.ts';
import type { RenderedBundle } from './types.ts';

type SubstitutionSpec = Partial<Pick<Track, 'substitute' | 'substituteFrom'>>;

/** Whether the track substitutes variables at all. */
export function substitutes(spec: SubstitutionSpec): boolean {
  return Object.keys(spec.substitute ?? {}).length > 0 || (spec.substituteFrom ?? []).length > 0;
}

/** Whether the fetch step can substitute this bundle itself (see the module comment). */
export function substitutesAtRender(spec: SubstitutionSpec, bundle: RenderedBundle): boolean {
  return (
    Object.keys(spec.substitute ?? {}).length > 0 &&
    (spec.substituteFrom ?? []).length === 0 &&
    (bundle.encryptedSources ?? []).length === 0
  );
}

/**
 * Every object with `variables` substituted (objects that opt out stay as they are), marked done.
 * `isSecret` tells a text holding a decrypted value, which no error may quote.
 */
export function substituteBundle(
  bundle: RenderedBundle,
  variables: Variables,
  isSecret?: (text: string) => boolean,
): RenderedBundle {
  const substituted = rebuildBundle(bundle, (object) =>
    substituteVariables(object.manifest, variables, {
      subject: `${object.subject} (${object.source.file})`,
      ...(isSecret === undefined ? {} : { isSecret }),
    }),
  );
  return { ...substituted, substituted: true };
}

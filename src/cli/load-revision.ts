/**
 * The revision `render` and `diff` work on, and its rendered bundle: from the
 * stored artifact when there is one (what sync applies), else fetched and
 * rendered on the spot without storing it — these commands only look.
 */
import type { Track } from '../config/types.ts';
import { parseBundle, type ClusterCapabilities } from '../render/index.ts';
import type { RenderedBundle } from '../render/types.ts';
import type { LocalContext } from '../sync/local-context.ts';
import type { TrackSource } from '../source/ports.ts';
import { commitOf, isRevisionId } from '../object-id.ts';
import { renderTrackRevision } from '../sync/render-track-revision.ts';
import { resolveSecrets } from '../sync/resolve-secrets.ts';
import { placeForTrack } from '../sync/load-stored-revision.ts';
import { actingAs } from '../sync/track-cluster.ts';
import { storedRender } from '../sync/fetch-track.ts';
import { renderSpecDigest } from '../render/render-spec-digest.ts';
import { untilInterrupted } from '../errors.ts';

export interface TargetRevision {
  readonly revision: string;
  /** How it was chosen, for people: `pinned`, `requested`, or the ref it was resolved from. */
  readonly origin: string;
}

/**
 * `requested` (a full sha as given, anything else resolved like a reference),
 * else the pin a rollback set (sync does not move a pinned track), else the
 * track's reference resolved now. A resolve stops when `signal` aborts (`diff`'s deadline), as a
 * sync's fetch job's does: the request under way is cancelled, and the caller stops waiting for
 * what cannot be.
 */
export async function targetRevision(
  track: Track,
  requested: string | undefined,
  ctx: LocalContext,
  pinned: string | null,
  signal?: AbortSignal,
): Promise<TargetRevision> {
  const resolve = async (target: TrackSource): Promise<TargetRevision> => {
    const resolving = ctx.source().then((source) => source.resolve(target, { signal }));
    const resolved = await untilInterrupted(resolving, signal);
    return { revision: resolved.revision, origin: resolved.ref };
  };
  if (requested !== undefined) {
    if (isRevisionId(requested)) return { revision: requested, origin: 'requested' };
    return resolve({ ...track, reference: requested, semver: undefined });
  }
  if (pinned) return { revision: pinned, origin: 'pinned' };
  return resolve(track);
}

/**
 * What the track's cluster serves, as the apply step reads it to record a chart's capabilities
 * (apply-revision.ts): as the track's service account, the server's version and discovery.
 */
async function clusterCapabilities(track: Track, ctx: LocalContext): Promise<ClusterCapabilities> {
  const cluster = actingAs(await ctx.cluster(track), track);
  return {
    kubeVersion: await cluster.serverVersion(),
    apiVersions: (await cluster.discover()).apiVersions(),
  };
}

/**
 * The bundle of `revision` placed in the track's cluster: from the stored
 * artifact, or fetched and parsed now. `secrets: 'resolve'` (what `diff`
 * compares) decrypts SOPS values and substitutes `substituteFrom` variables
 * as the apply step would; `'as-stored'` (what `render` prints) leaves them
 * as the artifact holds them. A fetch and render stop when `signal` aborts (`diff`'s deadline),
 * as a sync's fetch job's do: the Git requests under way are cancelled, a renderer killed; so
 * does the reading of secrets.
 */
export async function loadRevisionBundle(
  track: Track,
  target: TargetRevision,
  ctx: LocalContext,
  secrets: 'resolve' | 'as-stored' = 'resolve',
  signal?: AbortSignal,
): Promise<RenderedBundle> {
  const { revision } = target;
  // A revision asked for by id (or pinned) is what is stored under it; one resolved from the
  // reference is what a sync would apply: rendered anew once the track renders otherwise.
  const byId = target.origin === 'requested' || target.origin === 'pinned';
  const storedAs = byId
    ? (await ctx.artifacts.has(track.name, revision))
      ? revision
      : undefined
    : await storedRender(track, revision, renderSpecDigest(track), ctx);
  const stored =
    storedAs !== undefined
      ? parseBundle(await ctx.artifacts.get(track.name, storedAs))
      : (
          await untilInterrupted(
            renderTrackRevision(track, commitOf(revision), {
              source: await ctx.source(),
              state: ctx.state,
              clusterCapabilities: () => clusterCapabilities(track, ctx),
              ...(signal === undefined ? {} : { signal }),
            }),
            signal,
          )
        ).bundle;
  const parsed =
    secrets === 'resolve'
      ? await resolveSecrets(
          track,
          stored,
          { ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }) },
          signal,
        )
      : stored;
  // Placing needs the cluster's discovery to know which kinds are namespaced.
  const catalog = await (await ctx.cluster(track)).discover();
  return placeForTrack(parsed, track, catalog);
}

/**
 * One commit of a track -> its rendered bundle, its bytes and the revision id
 * they are stored under. Shared by the fetch job and the CLI's `render`/`diff`
 * of a revision not stored yet.
 *
 * Plain manifests need only the manifest files under subPath; a kustomization
 * may reach bases anywhere in the repository and read any file (generator
 * inputs, `.env`), a chart has `.tpl` helpers and `files/`, so those read
 * every file of the repository. A Helm chart renders
 * for the cluster capabilities the apply step recorded (before the first
 * apply, those the caller reads from the cluster, if it can), and its
 * revision id carries the bundle's digest (object-id.ts).
 */
import type { Track } from '../config/types.ts';
import {
  bundleDigest,
  renderRevision,
  rendererOf,
  serializeBundle,
  type ClusterCapabilities,
} from '../render/index.ts';
import type { RenderedBundle } from '../render/types.ts';
import { renderedRevision } from '../object-id.ts';
import type { JobScope } from '../source/job-scope.ts';
import type { GitSource } from '../source/ports.ts';
import type { StateStore } from '../store/ports.ts';
import { readTrackState } from './track-state.ts';

export interface RenderedTrackRevision {
  /** The revision id it is stored under: the commit, or commit+digest for a chart. */
  readonly revision: string;
  readonly bundle: RenderedBundle;
  readonly bytes: Uint8Array;
}

export interface RenderTrackDeps {
  readonly source: GitSource;
  readonly state: StateStore;
  readonly signal?: AbortSignal;
  /**
   * The fetch job's scope (SourceCall.job): its resolve reached the server with the track's
   * credentials, so the reads of the commit need not again. Left out (the CLI), each read checks.
   */
  readonly job?: JobScope;
  /**
   * The cluster's capabilities, for a chart whose track has none recorded yet: the CLI's
   * `render` and `diff` show what the first sync applies. The fetch job, without cluster
   * credentials, leaves it out: the apply step records them and has the chart rendered again.
   */
  readonly clusterCapabilities?: () => Promise<ClusterCapabilities>;
}

/** Reads and renders `commit` of the track. Throws render and source errors as they are. */
export async function renderTrackRevision(
  track: Track,
  commit: string,
  deps: RenderTrackDeps,
): Promise<RenderedTrackRevision> {
  // The job's signal cancels a fetch under way (untilInterrupted only stops waiting for it).
  const call = { signal: deps.signal, job: deps.job };
  let files = await deps.source.readFiles(track, commit, 'manifests', call);
  const renderer = rendererOf(track, files);
  if (renderer !== 'plain') files = await deps.source.readFiles(track, commit, 'repository', call);
  const capabilities =
    renderer === 'helm'
      ? ((await readTrackState(deps.state, track.name)).capabilities ??
        (await deps.clusterCapabilities?.()))
      : undefined;
  const bundle = await renderRevision(track, files, {
    ...(capabilities ? { capabilities } : {}),
    ...(deps.signal ? { signal: deps.signal } : {}),
  });
  const bytes = serializeBundle(bundle);
  const revision =
    renderer === 'helm'
      ? renderedRevision(commit, bundleDigest(bytes).slice('sha256:'.length))
      : commit;
  return { revision, bundle, bytes };
}

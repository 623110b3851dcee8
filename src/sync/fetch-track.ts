/**
 * The fetch job: resolve the track's reference, parse and validate the
 * revision, store it as an immutable artifact, and ask for a sync. Runs where
 * Git credentials are and cluster credentials are not, so it parses without
 * asking the cluster anything (scopes are placed by the apply side).
 *
 * "Newer" means resolved later: a fetch that resolved its revision before the
 * track's current desired revision was resolved changes nothing.
 */
import { redactSecrets } from '../redact.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError, InterruptedError, messageOf, untilInterrupted } from '../errors.ts';
import { JobScope } from '../source/job-scope.ts';
import type { CommitInfo, GitSource, SourceCall } from '../source/ports.ts';
import { VerificationError } from '../source/verify-signature.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import type { FetchJob, SyncJob } from './jobs.ts';
import {
  conditionOf,
  failedToParse,
  fetchedMessage,
  readTrackState,
  setCondition,
  setParsed,
  updateTrackState,
  type TrackState,
} from './track-state.ts';
import type { SkippedFile } from '../render/types.ts';
import { commitOf, isRevisionId, renderedRevision } from '../object-id.ts';
// The two modules, not render/index.ts: a fetch of a stored revision loads no renderer.
import { bundleDigest } from '../render/bundle-digest.ts';
import { renderSpecDigest } from '../render/render-spec-digest.ts';
import type { RenderedTrackRevision } from './render-track-revision.ts';
import { setPinnedReady } from './record-sync.ts';

export interface FetchDeps {
  readonly source: GitSource;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly now?: () => Date;
  /**
   * Aborted when the caller is asked to stop (the CLI at Ctrl-C): the fetch ends at once with
   * its InterruptedError and records nothing; a renderer it runs is stopped.
   */
  readonly signal?: AbortSignal;
}

export interface FetchResult {
  readonly track: string;
  /** The resolved commit, or null when resolving failed. */
  readonly revision: string | null;
  readonly resolvedAt: string;
  /** 'fetched': stored (or already stored) and a sync is due; 'stale': a later resolution exists; 'failed'. */
  readonly outcome: 'fetched' | 'stale' | 'failed';
  readonly error?: string;
  /**
   * The revision the track was pinned at when this one was fetched: the sync that follows
   * applies nothing until `driftless unpin` (job-events.ts tells the commit so). On a revision
   * that failed, the pin its failure left Ready to (setPinnedReady).
   */
  readonly pinned?: string;
}

/** How many skipped files to name in a status message; the rest are counted. */
const SKIPPED_NAMED = 5;

/** `; 2 files skipped (no Kubernetes object): a.yaml, b.yaml`, or `''`. */
function describeSkipped(skipped: readonly SkippedFile[]): string {
  if (skipped.length === 0) return '';
  const named = skipped.slice(0, SKIPPED_NAMED).map((entry) => entry.file);
  const more = skipped.length > SKIPPED_NAMED ? `, and ${skipped.length - SKIPPED_NAMED} more` : '';
  const files = skipped.length === 1 ? '1 file' : `${skipped.length} files`;
  return `; ${files} skipped (no Kubernetes object to apply): ${named.join(', ')}${more}`;
}

function reasonOf(error: unknown, fallback: string): string {
  return error instanceof DriftlessError ? error.code : fallback;
}

async function resolve(
  track: Track,
  job: FetchJob,
  source: GitSource,
  call: SourceCall,
): Promise<string> {
  // A stored revision id (a chart's commit+digest) names its commit; the chart renders anew.
  if (job.revision && isRevisionId(job.revision)) return commitOf(job.revision);
  const target = job.revision ? { ...track, reference: job.revision, semver: undefined } : track;
  return (await source.resolve(target, call)).revision;
}

/** Fetches, validates and stores the track's newest revision; `next` is the sync job to enqueue. */
export async function fetchTrack(
  track: Track,
  job: FetchJob,
  deps: FetchDeps,
): Promise<{ result: FetchResult; next?: SyncJob }> {
  const now = deps.now ?? (() => new Date());
  // This job's, and only this job's: the resolve's contact with the server spares the reads of
  // the commit that follow another round trip; the next job shows the credentials again.
  const call = { signal: deps.signal, job: new JobScope() };
  // Stamped when the answer arrived: the ref's state it reflects is at least that recent.
  let resolvedAt = now().toISOString();
  const fail = async (
    revision: string | null,
    condition: 'FilesFetched' | 'FilesParsed',
    error: unknown,
  ): Promise<{ result: FetchResult }> => {
    // Stopped, not failed: nothing is wrong with the revision.
    if (error instanceof InterruptedError) throw error;
    // A Git server may quote a token back, a renderer a value (src/redact.ts): not into status.
    const message = redactSecrets(messageOf(error));
    const reason = reasonOf(error, condition === 'FilesFetched' ? 'FetchFailed' : 'RenderFailed');
    let pinned: string | null = null;
    // Nothing is applied: the last good revision stays, the reason goes into status.
    await updateTrackState(deps.state, track.name, (state) => {
      // Fetched, then failed to parse. Not when the fetch itself failed (a signature refused):
      // True then False in one write would move FilesFetched's time on every retry.
      if (revision && condition !== 'FilesFetched')
        setCondition(state, 'FilesFetched', 'True', 'Fetched', fetchedMessage(revision), now());
      setCondition(state, condition, 'False', reason, message, now());
      // FilesParsed is False for this render now, not for a stored revision a sync could load.
      if (condition === 'FilesParsed') state.unloadedRevision = null;
      // A commit that failed while the track is pinned at another would not be applied anyway:
      // the pinned revision runs on, and Ready stays what its sync left (setPinnedReady). A
      // reference that did not resolve (no revision) names no such commit: Ready is False.
      if (revision && state.pinned && commitOf(state.pinned) !== commitOf(revision)) {
        pinned = state.pinned;
        setPinnedReady(state, state.pinned, now(), { revision, condition });
      } else {
        setCondition(state, 'Ready', 'False', reason, message, now());
      }
    });
    if (revision) {
      await deps.state.appendHistory(track.name, {
        revision,
        appliedAt: now().toISOString(),
        result: 'failed',
        trigger: job.trigger,
        ...(job.by === undefined ? {} : { by: job.by }),
        error: message,
      });
    }
    return {
      result: {
        track: track.name,
        revision,
        resolvedAt,
        outcome: 'failed',
        error: message,
        ...(pinned === null ? {} : { pinned }),
      },
    };
  };

  let revision: string;
  try {
    revision = await untilInterrupted(resolve(track, job, deps.source, call), deps.signal);
    resolvedAt = now().toISOString();
  } catch (error) {
    // A reference asked for by name that does not resolve (a mistyped `sync --revision`) says
    // nothing of the track: the request fails, and the track's status and history stay as they
    // were (its dependents are not held back by a typo).
    if (
      job.revision !== undefined &&
      !isRevisionId(job.revision) &&
      !(error instanceof InterruptedError)
    ) {
      const message = messageOf(error);
      return {
        result: {
          track: track.name,
          revision: null,
          resolvedAt,
          outcome: 'failed',
          error: message,
        },
      };
    }
    return fail(null, 'FilesFetched', error);
  }

  // A signature is checked before anything of the commit is read, rendered or stored.
  if (track.verify !== undefined) {
    try {
      if (deps.source.verifyCommit === undefined) {
        throw new VerificationError(`track "${track.name}": this source cannot check signatures`);
      }
      await untilInterrupted(deps.source.verifyCommit(track, revision, call), deps.signal);
    } catch (error) {
      return fail(revision, 'FilesFetched', error);
    }
  }

  // Files skipped by this render (none when the revision was stored already).
  let skipped: readonly SkippedFile[] = [];
  const renderedWith = renderSpecDigest(track);
  const stored = await storedRender(track, revision, renderedWith, deps);
  if (stored !== undefined) {
    revision = stored;
  } else {
    const commit = revision;
    let rendered: RenderedTrackRevision;
    try {
      // Loaded when a revision is rendered: a sync of a stored one needs none of the renderers.
      const { renderTrackRevision } = await import('./render-track-revision.ts');
      rendered = await untilInterrupted(
        renderTrackRevision(track, commit, { ...deps, job: call.job }),
        deps.signal,
      );
    } catch (error) {
      return fail(
        commit,
        error instanceof DriftlessError && error.code.startsWith('RENDER')
          ? 'FilesParsed'
          : 'FilesFetched',
        error,
      );
    }
    revision = await revisionToStore(track, rendered, deps.artifacts);
    skipped = rendered.bundle.skipped ?? [];
    if (!(await deps.artifacts.has(track.name, revision))) {
      await deps.artifacts.put(track.name, revision, rendered.bytes);
    }
  }

  const commit = await untilInterrupted(
    describeCommit(track, commitOf(revision), deps.source),
    deps.signal,
  );
  let stale = false;
  let pinned: string | null = null;
  await updateTrackState(deps.state, track.name, (state) => {
    stale = state.desiredResolvedAt !== null && state.desiredResolvedAt > resolvedAt;
    if (stale) return;
    pinned = state.pinned;
    // Its last sync failed to load it (an empty selection, a cluster unreachable, say).
    const failedBefore = state.desiredRevision === revision && failedToParse(state, revision);
    if (commit !== undefined) rememberCommit(state, commitOf(revision), commit);
    // Desired is the newest revision of what the track follows, fetched also while it is pinned.
    // A revision asked for by name while pinned is stored (a rollback can pick it) but nothing
    // applies it, so it does not become desired.
    const desired = job.revision === undefined || !state.pinned;
    if (desired) {
      state.desiredRevision = revision;
      state.desiredResolvedAt = resolvedAt;
      state.renderedWith = renderedWith;
    }
    setCondition(state, 'FilesFetched', 'True', 'Fetched', fetchedMessage(revision), now());
    const previous = conditionOf(state, 'FilesParsed');
    // A newer commit that failed while pinned is behind this one now: Ready names it no more.
    if (desired && state.pinned && conditionOf(state, 'Ready')?.reason === 'Pinned') {
      setPinnedReady(state, state.pinned, now());
    }
    // The apply step judges it again (failedToParse).
    if (failedBefore) return;
    // While pinned at another revision FilesParsed speaks of the pin (record-sync.ts): this one
    // is judged when unpinning lets a sync load it. Saying it was parsed now would also hide
    // that loading it failed before the pin. A False of a commit that failed to render (no
    // unloadedRevision) is not of the pin: only a fetch settles it, and a newer desired
    // revision, parsed and stored, does, as it would unpinned.
    const afterRenderFailure =
      desired && previous?.status === 'False' && state.unloadedRevision === null;
    if (state.pinned && commitOf(state.pinned) !== commitOf(revision) && !afterRenderFailure) {
      return;
    }
    // A revision stored before keeps the message its render wrote (with its skipped files).
    const keep =
      skipped.length === 0 &&
      previous?.status === 'True' &&
      previous.message.startsWith(`revision ${revision} `);
    setParsed(
      state,
      revision,
      now(),
      keep ? previous.message : `revision ${revision} parsed and stored${describeSkipped(skipped)}`,
    );
  });
  if (stale) return { result: { track: track.name, revision, resolvedAt, outcome: 'stale' } };
  return {
    result: {
      track: track.name,
      revision,
      resolvedAt,
      outcome: 'fetched',
      ...(pinned === null ? {} : { pinned }),
    },
    next: {
      type: 'sync',
      track: track.name,
      revision,
      resolvedAt,
      trigger: job.trigger,
      ...(job.by === undefined ? {} : { by: job.by }),
    },
  };
}

/**
 * The revision id `commit` is stored under as the track renders now, when no render is needed:
 * the desired revision, if it is of this commit and was rendered with the same spec (its
 * subPath, kustomize, sourceIgnore, substitute... — renderSpecDigest). A chart is rendered
 * every time: its revision id depends on the render (object-id.ts).
 */
export async function storedRender(
  track: Track,
  commit: string,
  renderedWith: string,
  deps: Pick<FetchDeps, 'artifacts' | 'state'>,
): Promise<string | undefined> {
  if (track.helm !== undefined) return undefined;
  const { desiredRevision, renderedWith: before } = await readTrackState(deps.state, track.name);
  if (desiredRevision === null || commitOf(desiredRevision) !== commit) return undefined;
  if (before !== renderedWith) return undefined;
  return (await deps.artifacts.has(track.name, desiredRevision)) ? desiredRevision : undefined;
}

/**
 * The id a fresh render is stored under. A commit is stored under its own id once; rendered
 * otherwise later (the track's spec changed) it gets `commit+digest`, as a chart does: an
 * artifact never changes, so a rollback to a revision applies what it applied then.
 */
async function revisionToStore(
  track: Track,
  rendered: RenderedTrackRevision,
  artifacts: ArtifactStore,
): Promise<string> {
  const { revision, bytes } = rendered;
  if (track.helm !== undefined || !(await artifacts.has(track.name, revision))) return revision;
  const digest = bundleDigest(bytes);
  if (bundleDigest(await artifacts.get(track.name, revision)) === digest) return revision;
  return renderedRevision(revision, digest.slice('sha256:'.length));
}

/** How many commits a track's state remembers: the dashboard's recent revisions. */
const COMMITS_KEPT = 20;

/** The commit's message and author, or undefined: the dashboard does without them. */
async function describeCommit(
  track: Track,
  commit: string,
  source: FetchDeps['source'],
): Promise<CommitInfo | undefined> {
  try {
    return await source.describeCommit?.(track, commit);
  } catch {
    return undefined;
  }
}

/** Records the commit, forgetting the oldest beyond {@link COMMITS_KEPT}. */
function rememberCommit(state: TrackState, commit: string, info: CommitInfo): void {
  const commits = { ...state.commits };
  delete commits[commit];
  commits[commit] = info;
  const names = Object.keys(commits);
  for (const name of names.slice(0, Math.max(0, names.length - COMMITS_KEPT))) {
    delete commits[name];
  }
  state.commits = commits;
}

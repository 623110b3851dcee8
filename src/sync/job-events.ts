/**
 * The notification events a finished job stands for, and which of them are
 * news: one event per transition of a track, so a failure that repeats at
 * every poll, or drift that stays, is told once until something changes.
 */
import { createHash } from 'node:crypto';
import type { NotificationEventType } from '../config/types.ts';
import type { NotificationEvent } from '../notify/events.ts';
import { commitOf, shortRevision } from '../object-id.ts';
import type { StateStore } from '../store/ports.ts';
import type { JobResult } from './run-job.ts';
import { conditionOf, readTrackState, updateTrackState } from './track-state.ts';

/**
 * Which kind of transition an event is: the last event told of each kind is
 * remembered (in the track state's `notified`, under this name), and an
 * event the same as it is not told again.
 */
type Transition =
  'fetch' | 'notApplied' | 'deploy' | 'health' | 'drift' | 'writeBack' | 'lifecycle';

const TRANSITION: Readonly<Record<NotificationEventType, Transition>> = {
  fetched: 'fetch',
  applied: 'deploy',
  rolledBack: 'deploy',
  failed: 'deploy',
  degraded: 'health',
  healthy: 'health',
  drifted: 'drift',
  corrected: 'drift',
  writtenBack: 'writeBack',
  suspended: 'lifecycle',
};

interface Draft extends Omit<NotificationEvent, 'track' | 'time'> {
  /**
   * The event's kind of transition: its type's, but for a failed write-back, which is the
   * write-back's own (else it and the syncs around it would take turns being news), and for a
   * `fetched` event of a revision not applied (pinned, superseded), which has a kind of its own:
   * as a `fetch`, it would make the next poll's fetch of the applied commit news again, and
   * that commit's status would go back from success to pending.
   */
  readonly transition: Transition;
}

/** What a job tells, and the kinds of transition it ended with nothing to tell. */
interface JobNews {
  readonly drafts: readonly Draft[];
  /**
   * The kinds whose last told event no longer stands, the job found them well: a clean drift
   * check, a resume, a write-back Git already had. The next event of such a kind is news even
   * when it is the same as the one told before (the same object drifting again).
   */
  readonly settled: readonly Transition[];
}

/** The events of `done`, in the order they happened. */
export function eventsOf(track: string, done: JobResult, time: string): NotificationEvent[] {
  return newsOf(done).drafts.map((draft) => eventOf(track, time, draft));
}

function eventOf(track: string, time: string, draft: Draft): NotificationEvent {
  const { event, result, revision, message, subjects } = draft;
  return { track, event, revision, result, message, subjects, time };
}

function newsOf(done: JobResult): JobNews {
  const event = (
    type: NotificationEventType,
    result: string,
    revision: string | null,
    message: string,
    subjects: readonly string[] = [],
    transition: Transition = TRANSITION[type],
  ): Draft => ({ event: type, result, revision, message, subjects, transition });
  const tells = (...drafts: Draft[]): JobNews => ({ drafts, settled: [] });
  switch (done.type) {
    case 'fetch': {
      const { outcome, revision, error, pinned } = done.result;
      if (outcome === 'failed')
        return tells(event('failed', 'failed', revision, error ?? 'fetch failed'));
      if (outcome !== 'fetched') return tells();
      return pinned === undefined
        ? tells(event('fetched', 'fetched', revision, 'revision fetched'))
        : tells(...notApplied(revision, pinned));
    }
    case 'sync':
    case 'rollback': {
      const { result, revision, error, state } = done.result;
      if (result === 'failed')
        return tells(event('failed', result, revision, error ?? 'sync failed'));
      // Nothing applied: the health in its state is the pinned revision's, told by its rollback.
      if (result === 'pinned') return tells(...notApplied(revision, state.pinned));
      // Nothing applied either: the health in its state is another revision's. A chart to render
      // again for the cluster (`rerender`) is no other revision: the fetch it asks for goes on.
      if (result === 'superseded') {
        return done.result.rerender === true
          ? tells()
          : tells(...supersededBy(revision, state.desiredRevision));
      }
      const out: Draft[] = [];
      // `unchanged` is applied too: the revision's objects are all in the cluster, it only
      // changed none of them (a README-only commit, the commit a write-back pushed). Told when
      // it is news: a new revision, or the sync after a failure. The message is the same as
      // for `applied`, so the next sync of the same revision is no news.
      if (result === 'applied' || result === 'unchanged') {
        out.push(
          done.type === 'rollback'
            ? event('rolledBack', result, revision, 'rolled back and pinned')
            : event('applied', result, revision, 'applied'),
        );
      }
      const healthy = conditionOf(state, 'Healthy');
      if (healthy?.status === 'True' && (result === 'applied' || result === 'unchanged')) {
        out.push(event('healthy', result, revision, healthy.message || 'healthy'));
      } else if (healthy?.status === 'False') {
        out.push(event('degraded', result, revision, healthy.message || 'not healthy'));
      }
      return tells(...out);
    }
    case 'drift': {
      const { revision, drifted, missing, corrected, errors, writeBack } = done.result;
      // A `syncTo: git` object changed in the cluster is written back, as two-way sync is
      // meant to: that is told as `writtenBack`, not as drift.
      const writtenBack = new Set(writeBack.map((change) => change.subject));
      const subjects = [
        ...drifted.map((d) => d.subject).filter((subject) => !writtenBack.has(subject)),
        ...missing,
      ];
      if (subjects.length === 0) {
        // A check that could not read every object does not say the drift told is gone.
        return { drafts: [], settled: errors.length === 0 ? ['drift'] : [] };
      }
      return tells(
        corrected
          ? event('corrected', 'corrected', revision, 'drift put back', subjects)
          : event('drifted', 'drifted', revision, 'changed in the cluster', subjects),
      );
    }
    case 'writeBack': {
      const { result, commit, writtenBack, error } = done.result;
      if (result === 'failed') {
        return tells(
          event('failed', result, commit, error ?? 'write-back failed', [], 'writeBack'),
        );
      }
      return result === 'written-back'
        ? tells(
            event('writtenBack', result, commit, 'cluster changes committed to Git', writtenBack),
          )
        : { drafts: [], settled: ['writeBack'] };
    }
    case 'lifecycle': {
      const { result, unchanged, revision, suspended } = done.result;
      // A suspend that found the track suspended already changed nothing to tell.
      if (result === 'suspended')
        return unchanged === true
          ? tells()
          : tells(event('suspended', 'suspended', revision, 'suspended'));
      // Resumed: the next suspend is news again.
      return result === 'resumed' && unchanged !== true && !suspended
        ? { drafts: [], settled: ['lifecycle'] }
        : tells();
    }
    case 'discover':
    case 'notify':
    case 'suspended':
      return tells();
  }
}

/**
 * The `fetched` event of a revision the track's pin keeps from being applied (result `pinned`):
 * its commit status stays `pending`, saying why, since `driftless unpin` may still apply it.
 * The fetch tells it when it finds the pin, the pinned sync after it when the pin came between
 * (the same event, so told once). None for the pinned commit itself: its rollback applied it.
 */
function notApplied(revision: string | null, pinned: string | null): Draft[] {
  if (revision === null || pinned === null || commitOf(pinned) === commitOf(revision)) return [];
  const message = `fetched; not applied while the track is pinned at ${shortRevision(pinned)} (run "driftless unpin" to apply it)`;
  return [
    {
      event: 'fetched',
      result: 'pinned',
      revision,
      message,
      subjects: [],
      transition: 'notApplied',
    },
  ];
}

/**
 * The `fetched` event of a revision a newer one superseded before it was applied (result
 * `superseded`; newest wins, apply-revision.ts): its commit status stays `pending`, saying so,
 * rather than "applying" forever. `desired` is the newer revision, the one the track's state
 * wants now. None when it is the same commit (another render of it is applied).
 */
function supersededBy(revision: string | null, desired: string | null): Draft[] {
  if (revision === null || desired === null || commitOf(desired) === commitOf(revision)) return [];
  const message = `fetched; not applied: newer commit ${shortRevision(commitOf(desired))} superseded it`;
  return [
    {
      event: 'fetched',
      result: 'superseded',
      revision,
      message,
      subjects: [],
      transition: 'notApplied',
    },
  ];
}

/**
 * What makes an event the same as the last one of its kind: `legacy`, the
 * JSON that states written before 2026-11-28 keep, and `hashed`, its sha256,
 * which the state keeps now (a drift of thousands of objects would otherwise
 * keep every subject there).
 */
function fingerprintsOf(event: Draft): { legacy: string; hashed: string } {
  const legacy = JSON.stringify([event.event, event.revision, event.message, event.subjects]);
  return { legacy, hashed: createHash('sha256').update(legacy, 'utf8').digest('hex') };
}

/**
 * The events of `done` that are news for the track — not the same as the
 * last one told of their kind — remembered in its state as told.
 *
 * Told means handed to the receivers, delivered or not: delivery is best
 * effort (notify/deliver.ts), and an event sent again at every poll until a
 * receiver that is down takes it would repeat it to every receiver that did.
 * A missed event is not lost for good: the next transition is told.
 */
export async function newEvents(
  state: StateStore,
  track: string,
  done: JobResult,
  time: string,
): Promise<NotificationEvent[]> {
  const { drafts, settled } = newsOf(done);
  if (drafts.length === 0 && settled.length === 0) return [];
  // Most jobs change nothing told (the same revision at every poll): read, and write only then.
  const before = (await readTrackState(state, track)).notified ?? {};
  const after = { ...before };
  if (tell(after, drafts, settled).length === 0 && sameRecords(before, after)) return [];
  let news: Draft[] = [];
  await updateTrackState(state, track, (current) => {
    const told = { ...(current.notified ?? {}) };
    news = tell(told, drafts, settled);
    current.notified = told;
  });
  return news.map((draft) => eventOf(track, time, draft));
}

/** The drafts that are news against `told`, which is updated to them. */
function tell(
  told: Record<string, string>,
  drafts: readonly Draft[],
  settled: readonly Transition[],
): Draft[] {
  for (const transition of settled) delete told[transition];
  const news = drafts.filter((draft) => {
    const { legacy, hashed } = fingerprintsOf(draft);
    // An event told before the fingerprint was hashed is not told again after an upgrade.
    const repeat = told[draft.transition] === hashed || told[draft.transition] === legacy;
    told[draft.transition] = hashed;
    return !repeat;
  });
  // A failure told puts the health told before it in doubt (a commit status is `failure`
  // now): once the track recovers, its health is news again, so the status goes back.
  if (news.some((draft) => draft.event === 'failed' && draft.transition === 'deploy')) {
    delete told.health;
  }
  return news;
}

function sameRecords(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

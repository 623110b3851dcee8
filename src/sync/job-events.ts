/**
 * The notification events a finished job stands for, and which of them are
 * news: one event per transition of a track, so a failure that repeats at
 * every poll, or drift that stays, is told once until something changes.
 */
import { createHash } from 'node:crypto';
import type { NotificationEventType } from '../config/types.ts';
import type { NotificationEvent } from '../notify/events.ts';
import type { StateStore } from '../store/ports.ts';
import type { JobResult } from './run-job.ts';
import { conditionOf, updateTrackState } from './track-state.ts';

type Draft = Omit<NotificationEvent, 'track' | 'time'>;

/** The events of `done`, in the order they happened. */
export function eventsOf(track: string, done: JobResult, time: string): NotificationEvent[] {
  return drafts(done).map((draft) => ({ track, time, ...draft }));
}

function drafts(done: JobResult): Draft[] {
  const event = (
    type: NotificationEventType,
    result: string,
    revision: string | null,
    message: string,
    subjects: readonly string[] = [],
  ): Draft => ({ event: type, result, revision, message, subjects });
  switch (done.type) {
    case 'fetch': {
      const { outcome, revision, error } = done.result;
      if (outcome === 'failed')
        return [event('failed', 'failed', revision, error ?? 'fetch failed')];
      return outcome === 'fetched'
        ? [event('fetched', 'fetched', revision, 'revision fetched')]
        : [];
    }
    case 'sync':
    case 'rollback': {
      const { result, revision, error, state } = done.result;
      if (result === 'failed') return [event('failed', result, revision, error ?? 'sync failed')];
      const out: Draft[] = [];
      if (result === 'applied') {
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
      return out;
    }
    case 'drift': {
      const { revision, drifted, missing, corrected } = done.result;
      const subjects = [...drifted.map((d) => d.subject), ...missing];
      if (subjects.length === 0) return [];
      return corrected
        ? [event('corrected', 'corrected', revision, 'drift put back', subjects)]
        : [event('drifted', 'drifted', revision, 'changed in the cluster', subjects)];
    }
    case 'writeBack': {
      const { result, commit, writtenBack, error } = done.result;
      if (result === 'failed')
        return [event('failed', result, commit, error ?? 'write-back failed')];
      return result === 'written-back'
        ? [event('writtenBack', result, commit, 'cluster changes committed to Git', writtenBack)]
        : [];
    }
    case 'lifecycle':
      // A suspend that found the track suspended already changed nothing to tell.
      return done.result.result === 'suspended' && done.result.unchanged !== true
        ? [event('suspended', 'suspended', done.result.revision, 'suspended')]
        : [];
    case 'discover':
    case 'notify':
    case 'suspended':
      return [];
  }
}

/** Which kind of transition an event is; the last event of each is remembered. */
const GROUP: Readonly<Record<NotificationEventType, string>> = {
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

/**
 * What makes an event the same as the last one of its kind: `legacy`, the
 * JSON that states written before 2026-11-28 keep, and `hashed`, its sha256,
 * which the state keeps now (a drift of thousands of objects would otherwise
 * keep every subject there).
 */
function fingerprintsOf(event: NotificationEvent): { legacy: string; hashed: string } {
  const legacy = JSON.stringify([event.event, event.revision, event.message, event.subjects]);
  return { legacy, hashed: createHash('sha256').update(legacy, 'utf8').digest('hex') };
}

/**
 * The events that are news for the track — not the same as the last one of
 * their kind — remembered in its state as told.
 */
export async function newEvents(
  state: StateStore,
  track: string,
  events: readonly NotificationEvent[],
): Promise<NotificationEvent[]> {
  if (events.length === 0) return [];
  let news: NotificationEvent[] = [];
  await updateTrackState(state, track, (current) => {
    const told = { ...(current.notified ?? {}) };
    news = events.filter((event) => {
      const key = GROUP[event.event];
      const { legacy, hashed } = fingerprintsOf(event);
      // An event told before the fingerprint was hashed is not told again after an upgrade.
      const repeat = told[key] === hashed || told[key] === legacy;
      told[key] = hashed;
      return !repeat;
    });
    current.notified = told;
  });
  return news;
}

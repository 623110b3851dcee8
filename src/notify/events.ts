/**
 * What notifications carry (DESIGN.md "Notifications and metrics"): one
 * event per transition of a track, the same JSON a generic webhook receives.
 */
import type { NotificationEventType } from '../config/types.ts';

export interface NotificationEvent {
  readonly track: string;
  readonly event: NotificationEventType;
  /** The commit concerned, or null (a fetch that could not resolve one). */
  readonly revision: string | null;
  /**
   * The job's result word (`applied`, `failed`, `corrected`, ...); on a `fetched` event of a
   * revision that was not applied, `pinned` (the track is pinned at another one) or `superseded`
   * (a newer commit is applied instead).
   */
  readonly result: string;
  /** One line for people; the first error when something failed. */
  readonly message: string;
  /** Objects concerned (`Kind/namespace/name`): what drifted, what was written back. */
  readonly subjects: readonly string[];
  /** ISO-8601. */
  readonly time: string;
  /** How many subjects {@link boundedEvent} left out; absent when it left out none. */
  readonly subjectsOmitted?: number;
}

/**
 * The most bytes of JSON an event is sent as: a webhook's body, an SNS
 * message, an EventBridge detail, a queued notify job. SNS and EventBridge
 * refuse more than 256 KiB (so do SQS queues made before 2025), and web
 * frameworks' default body limits are lower (Express's: 100 KB); ~1,000
 * subjects fit.
 */
export const MAX_EVENT_JSON_BYTES = 64 * 1024;

/** The most characters of `message` an event carries: the start of an error says what failed. */
export const MAX_EVENT_MESSAGE_CHARS = 4 * 1024;

/**
 * `event` as receivers are sent it: its message cut to
 * {@link MAX_EVENT_MESSAGE_CHARS}, and, when its JSON would be larger than
 * `maxBytes`, only the first subjects that fit, with `subjectsOmitted`
 * counting the rest. A drift of thousands of objects is then still told,
 * where every receiver would refuse the whole list.
 */
export function boundedEvent(
  event: NotificationEvent,
  maxBytes: number = MAX_EVENT_JSON_BYTES,
): NotificationEvent {
  const bounded =
    event.message.length > MAX_EVENT_MESSAGE_CHARS
      ? { ...event, message: `${event.message.slice(0, MAX_EVENT_MESSAGE_CHARS - 1)}…` }
      : event;
  if (Buffer.byteLength(JSON.stringify(bounded)) <= maxBytes) return bounded;
  const omittedBefore = event.subjectsOmitted ?? 0;
  // The JSON without subjects, counting every one as left out: keeping one only shortens the count.
  let size = Buffer.byteLength(
    JSON.stringify({
      ...bounded,
      subjects: [],
      subjectsOmitted: omittedBefore + event.subjects.length,
    }),
  );
  const kept: string[] = [];
  for (const subject of event.subjects) {
    const more = Buffer.byteLength(JSON.stringify(subject)) + (kept.length > 0 ? 1 : 0);
    if (size + more > maxBytes) break;
    size += more;
    kept.push(subject);
  }
  return {
    ...bounded,
    subjects: kept,
    subjectsOmitted: omittedBefore + event.subjects.length - kept.length,
  };
}

import { ignoredPushReason } from './payload.ts';
import type { ParsedDelivery, PushEvent } from './types.ts';

/**
 * The parsed delivery of pushed refs: those worth a fetch, or `ignored` with
 * the reasons when none is (deletions, refs that are neither branches nor tags).
 */
export function pushDelivery(candidates: readonly PushEvent[]): ParsedDelivery {
  const reasons: string[] = [];
  const events = candidates.filter((event) => {
    const reason = ignoredPushReason(event.ref, event.after);
    if (reason !== undefined) reasons.push(reason);
    return reason === undefined;
  });
  if (events.length > 0) return { kind: 'push', events };
  return { kind: 'ignored', reason: reasons.join('; ') || 'push of no refs' };
}

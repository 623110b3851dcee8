/**
 * A track off the config, as the pages say it: one removed from driftless.yaml whose state is still
 * stored, the track of a deleted GitTrack whose objects are being collected, or one its source
 * keeps while the document that gave it is refused (held). Nothing syncs it,
 * and the dashboard refuses its actions (409): the pages show what the store keeps of it, marked
 * as such, and no action buttons. Words only (no DOM), so they read the same on every page.
 */
import type { OffConfigTrackJson, TrackStatusJson } from '../src/dashboard/types.ts';

export interface OffConfigText {
  /** The badge's words. */
  readonly label: string;
  /** What it means and what comes next: the badge's title, the track page's notice. */
  readonly explanation: string;
  /** Once a collection failed: how often in a row, and from when a discovery tries again (ISO). */
  readonly retry?: { readonly failures: number; readonly nextTryFrom: string };
}

/** Whether a track's entry is that of a track off the config (`removedFromConfig`). */
export function isOffConfig(status: TrackStatusJson): status is OffConfigTrackJson {
  return status.removedFromConfig === true;
}

/** What to say of a track off the config; undefined for a configured one. */
export function offConfigText(status: TrackStatusJson): OffConfigText | undefined {
  if (!isOffConfig(status)) return undefined;
  const { collecting, held } = status;
  if (held !== undefined) {
    const document = held.document ?? 'the document that gave it';
    return {
      label: 'Document refused',
      explanation: `tracksFrom source "${held.source}" refuses ${document} for now${held.problem === undefined ? '' : ` (${held.problem})`}: the track keeps its name, state and objects, and nothing syncs it until the document is mended.`,
    };
  }
  if (collecting === undefined) {
    return {
      label: 'Removed from config',
      explanation: `No longer in the config, so nothing syncs it: its state and objects stay until "driftless delete --track ${status.track}" collects them.`,
    };
  }
  const { failures, nextTryFrom } = collecting;
  return {
    label: 'Being collected',
    explanation: `GitTrack ${collecting.gitTrack} was deleted: the discoveries of tracksFrom source "${collecting.source}" remove its objects, then its state. Nothing syncs it.`,
    ...(failures === undefined || nextTryFrom === undefined
      ? {}
      : { retry: { failures, nextTryFrom } }),
  };
}

/** `failed 2 times in a row`: how often a collection failed, for a sentence. */
export function failuresText(failures: number): string {
  return failures === 1 ? 'failed once' : `failed ${failures} times in a row`;
}

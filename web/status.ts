/**
 * States as badges: always words, with colour only as a second cue (and a
 * shape, the dot, that differs in nothing but colour is marked decorative).
 */
import type { ObservedObject, OverviewRow, TrackStatusJson } from '../src/dashboard/types.ts';
import { h } from './dom.ts';
import { absoluteTime } from './format.ts';
import { failuresText, offConfigText } from './off-config.ts';

export type Tone = 'success' | 'danger' | 'attention' | 'neutral' | 'info';

export function badge(text: string, tone: Tone, title?: string): HTMLElement {
  return h(
    'span',
    { class: `badge badge-${tone}`, title },
    h('span', { class: 'badge-dot', 'aria-hidden': 'true' }),
    text,
  );
}

/**
 * The Suspended badge of a configured track, its tooltip saying what suspends it (a suspension in
 * the config no action here can lift); null when it is not suspended.
 */
export function suspendedBadge(
  row: Pick<OverviewRow, 'status' | 'suspendedInConfig'>,
): HTMLElement | null {
  if (!row.status.suspended) return null;
  return badge(
    'Suspended',
    'attention',
    row.suspendedInConfig === true
      ? 'suspended in driftless.yaml (suspend: true): remove it there to resume'
      : 'webhooks, polls and drift checks leave it alone until it is resumed',
  );
}

const READY: Record<OverviewRow['ready'], [string, Tone]> = {
  True: ['Ready', 'success'],
  False: ['Not ready', 'danger'],
  Unknown: ['Unknown', 'neutral'],
};

export function healthBadge(row: Pick<OverviewRow, 'ready' | 'reason'>): HTMLElement {
  const [text, tone] = READY[row.ready];
  return badge(text, tone, `Ready: ${row.ready} (${row.reason})`);
}

/** Whether the cluster runs what the track wants: the pin when pinned, else the newest revision. */
export function syncState(status: TrackStatusJson): { text: string; tone: Tone; detail: string } {
  const wanted = status.pinned ?? status.desiredRevision;
  if (status.appliedRevision === null) {
    return { text: 'Never synced', tone: 'neutral', detail: 'nothing applied yet' };
  }
  if (wanted === null || wanted === status.appliedRevision) {
    return {
      text: 'Synced',
      tone: 'success',
      detail: status.pinned ? 'at the pinned revision' : 'at the newest revision',
    };
  }
  return {
    text: 'Out of date',
    tone: 'attention',
    detail: status.pinned
      ? 'the pinned revision is not applied yet'
      : 'a newer revision is not applied yet',
  };
}

/**
 * `Busy` while an apply job holds the track (its other syncs, rollbacks and drift checks are
 * refused until it ends), with which job, since when and its lease as its title; null when free.
 */
export function busyBadge(status: TrackStatusJson): HTMLElement | null {
  const { busy } = status;
  if (busy === null) return null;
  const job = busy.job === null ? 'an apply job' : `a ${busy.job}`;
  const since = busy.since === null ? '' : ` since ${absoluteTime(busy.since)}`;
  const where = busy.pid === null ? '' : ` (pid ${busy.pid} on ${busy.host ?? 'its machine'})`;
  return badge(
    'Busy',
    'info',
    `${job} runs${since}${where}; other syncs, rollbacks and drift checks wait for it (until ${absoluteTime(busy.until)} at the latest; lease ${busy.lease}, for driftless unlock if its process is gone)`,
  );
}

/**
 * `Being collected` or `Removed from config` for a track off the config, what it means as its
 * title; null for a configured track.
 */
export function offConfigBadge(status: TrackStatusJson): HTMLElement | null {
  const text = offConfigText(status);
  if (text === undefined) return null;
  const retry =
    text.retry === undefined
      ? ''
      : ` The collection ${failuresText(text.retry.failures)}; a discovery tries again from ${absoluteTime(text.retry.nextTryFrom)}.`;
  return badge(text.label, 'attention', `${text.explanation}${retry}`);
}

export function syncBadge(status: TrackStatusJson): HTMLElement {
  const state = syncState(status);
  return badge(state.text, state.tone, state.detail);
}

const OBJECT_SYNC: Record<ObservedObject['sync'], Tone> = {
  InSync: 'success',
  OutOfSync: 'attention',
  Missing: 'danger',
  Failed: 'danger',
};

const OBJECT_HEALTH: Record<ObservedObject['health'], Tone> = {
  Healthy: 'success',
  Progressing: 'info',
  Degraded: 'danger',
  Unknown: 'neutral',
};

export function objectSyncBadge(sync: ObservedObject['sync']): HTMLElement {
  return badge(
    sync === 'InSync' ? 'In sync' : sync === 'OutOfSync' ? 'Out of sync' : sync,
    OBJECT_SYNC[sync] ?? 'neutral',
  );
}

export function objectHealthBadge(health: ObservedObject['health']): HTMLElement {
  return badge(health, OBJECT_HEALTH[health] ?? 'neutral');
}

const RESULTS: Record<string, Tone> = {
  applied: 'success',
  unchanged: 'neutral',
  failed: 'danger',
  'drift-corrected': 'info',
  'written-back': 'info',
  suspended: 'attention',
};

export function resultBadge(result: string): HTMLElement {
  return badge(result, RESULTS[result] ?? 'neutral');
}

export function conditionBadge(status: 'True' | 'False' | 'Unknown'): HTMLElement {
  return badge(status, status === 'True' ? 'success' : status === 'False' ? 'danger' : 'neutral');
}

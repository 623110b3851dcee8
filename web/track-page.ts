/** `#/tracks/<track>`: a track's state, actions, objects, history and revisions. */
import type {
  OffConfigTrackJson,
  TrackAnswer,
  TrackDetail,
  TrackStatusJson,
} from '../src/dashboard/types.ts';
import { ApiError, getJson, trackPath } from './api.ts';
import { h, replaceContent, scrollBox, uniqueId } from './dom.ts';
import {
  absoluteTime,
  revisionCode,
  revisionWithCommit,
  shortRevision,
  timeAgo,
} from './format.ts';
import { changeTracker, refreshStatus, startPolling, type Page } from './page.ts';
import { currentSession, onSessionChange } from './session.ts';
import { failuresText, offConfigText } from './off-config.ts';
import {
  badge,
  busyBadge,
  conditionBadge,
  healthBadge,
  offConfigBadge,
  resultBadge,
  suspendedBadge,
  syncBadge,
} from './status.ts';
import { actionBar } from './track-actions.ts';
import { historySection } from './track-history.ts';
import { objectsSection } from './track-objects.ts';
import { revisionsSection } from './track-revisions.ts';

/** One term of a summary's description list, with its value. */
function item(term: string, ...value: (Node | string | null)[]): HTMLElement[] {
  return [h('dt', null, term), h('dd', null, ...value)];
}

function badges(detail: TrackDetail): HTMLElement {
  const { status } = detail.row;
  return h(
    'div',
    { class: 'badges' },
    healthBadge(detail.row),
    syncBadge(status),
    busyBadge(status),
    suspendedBadge(detail.row),
    status.pinned !== null ? badge(`Pinned at ${shortRevision(status.pinned)}`, 'info') : null,
  );
}

function summary(detail: TrackDetail): HTMLElement {
  const { row } = detail;
  const { status } = row;
  return h(
    'div',
    null,
    row.ready === 'True'
      ? null
      : h(
          'div',
          { class: 'notice notice-error' },
          h('strong', null, row.reason),
          ': ',
          row.message,
        ),
    h(
      'dl',
      { class: 'summary' },
      item('Applied', revisionWithCommit(status.appliedRevision, row.appliedCommit)),
      status.desiredRevision !== status.appliedRevision
        ? item('Newest', revisionWithCommit(status.desiredRevision, row.desiredCommit))
        : null,
      status.pinned !== null ? item('Pinned at', revisionCode(status.pinned)) : null,
      item(
        'Last sync',
        row.lastSync ? timeAgo(row.lastSync.appliedAt) : h('span', { class: 'muted' }, 'never'),
        row.lastSync ? ' ' : null,
        row.lastSync ? resultBadge(row.lastSync.result) : null,
      ),
      item(
        'Drift',
        row.drifted === null
          ? h('span', { class: 'muted' }, 'not checked yet')
          : `${row.drifted} ${row.drifted === 1 ? 'object' : 'objects'} drifted`,
        row.drifted !== null && row.driftCheckedAt
          ? h('span', { class: 'muted' }, ' · checked ')
          : null,
        row.drifted !== null && row.driftCheckedAt ? timeAgo(row.driftCheckedAt) : null,
      ),
      item(
        'Objects',
        `${status.objectsInSync} in sync of ${status.objectsApplied} applied`,
        status.objectsIgnored > 0 ? `, ${status.objectsIgnored} ignored` : '',
      ),
    ),
  );
}

/** The Ready condition as a row has it, from a track's conditions. */
function readyOf(status: TrackStatusJson): { ready: 'True' | 'False' | 'Unknown'; reason: string } {
  const ready = status.conditions.find((condition) => condition.type === 'Ready');
  return { ready: ready?.status ?? 'Unknown', reason: ready?.reason ?? 'NeverSynced' };
}

function offConfigBadges(entry: OffConfigTrackJson): HTMLElement {
  return h(
    'div',
    { class: 'badges' },
    offConfigBadge(entry),
    healthBadge(readyOf(entry)),
    busyBadge(entry),
    entry.suspended ? badge('Suspended', 'attention') : null,
    entry.pinned !== null ? badge(`Pinned at ${shortRevision(entry.pinned)}`, 'info') : null,
  );
}

/**
 * What the store keeps of a track off the config: why it is off, its last revisions and counts.
 * Its objects, history and stored revisions are not read (no config to observe them by), and it
 * has no actions: the dashboard refuses them.
 */
function offConfigSummary(entry: OffConfigTrackJson): HTMLElement {
  const text = offConfigText(entry);
  const ready = entry.conditions.find((condition) => condition.type === 'Ready');
  return h(
    'div',
    null,
    h(
      'div',
      { class: 'notice', role: 'note' },
      h('strong', null, text?.label ?? 'Off the config'),
      ': ',
      text?.explanation ?? '',
      text?.retry === undefined
        ? null
        : [
            ` The collection ${failuresText(text.retry.failures)} (the Ready condition says why); a discovery tries again from `,
            h('time', { datetime: text.retry.nextTryFrom }, absoluteTime(text.retry.nextTryFrom)),
            '.',
          ],
      ' The dashboard runs no actions on it.',
    ),
    ready?.status === 'False'
      ? h(
          'div',
          { class: 'notice notice-error' },
          h('strong', null, ready.reason),
          ': ',
          ready.message,
        )
      : null,
    h(
      'dl',
      { class: 'summary' },
      item('Applied', revisionWithCommit(entry.appliedRevision, null)),
      entry.desiredRevision !== entry.appliedRevision
        ? item('Newest', revisionWithCommit(entry.desiredRevision, null))
        : null,
      entry.pinned !== null ? item('Pinned at', revisionCode(entry.pinned)) : null,
      item(
        'Objects',
        `${entry.objectsInSync} in sync of ${entry.objectsApplied} applied`,
        entry.objectsIgnored > 0 ? `, ${entry.objectsIgnored} ignored` : '',
        ` at its last sync; ${entry.inventory.length} in its inventory`,
      ),
    ),
  );
}

function conditionsSection(): { element: HTMLElement; render(status: TrackStatusJson): void } {
  const headingId = uniqueId('conditions');
  const body = scrollBox('Conditions');
  return {
    element: h(
      'section',
      { 'aria-labelledby': headingId },
      h('div', { class: 'section-header' }, h('h2', { id: headingId }, 'Conditions')),
      body,
    ),
    render(status) {
      replaceContent(
        body,
        status.conditions.length === 0
          ? h('p', { class: 'empty' }, 'No conditions yet: the track was never synced.')
          : h(
              'table',
              { class: 'data-table' },
              h('caption', { class: 'visually-hidden' }, 'Conditions'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Type', 'Status', 'Reason', 'Message', 'Since'].map((name) =>
                    h('th', { scope: 'col' }, name),
                  ),
                ),
              ),
              h(
                'tbody',
                null,
                status.conditions.map((condition) =>
                  h(
                    'tr',
                    null,
                    h('th', { scope: 'row' }, condition.type),
                    h('td', null, conditionBadge(condition.status)),
                    h('td', null, condition.reason),
                    h('td', { class: 'message-cell' }, condition.message),
                    h('td', null, timeAgo(condition.lastTransitionTime)),
                  ),
                ),
              ),
            ),
      );
    },
  };
}

export function trackPage(track: string): Page {
  let detail: TrackDetail | null = null;
  const status = refreshStatus();
  const heading = h('h1', { tabindex: -1 }, track);
  const headerBadges = h('div');
  const summaryArea = h('div');
  const content = h('div', { class: 'track-sections', hidden: true });
  // A track off the config: what the store keeps of it, in place of `content`.
  const offConfigContent = h('div', { class: 'track-sections', hidden: true });
  const offConfigArea = h('div');
  const offConfigConditions = conditionsSection();
  replaceContent(offConfigContent, offConfigArea, offConfigConditions.element);
  const conditions = conditionsSection();
  const objects = objectsSection();
  const history = historySection();
  const revisions = revisionsSection(track);
  const changes = {
    header: changeTracker(),
    conditions: changeTracker(),
    objects: changeTracker(),
    history: changeTracker(),
    revisions: changeTracker(),
  };
  const element = h(
    'div',
    { class: 'page track-page' },
    h(
      'nav',
      { 'aria-label': 'Breadcrumb', class: 'breadcrumb' },
      h(
        'ol',
        null,
        h('li', null, h('a', { href: '#/' }, 'Tracks')),
        h('li', { 'aria-current': 'page' }, track),
      ),
    ),
    h('div', { class: 'page-header' }, heading, headerBadges),
    status.element,
    content,
    offConfigContent,
  );

  const poller = startPolling(async (signal) => {
    try {
      const fresh = await getJson<TrackAnswer>(trackPath(track), { signal });
      status.loaded();
      if ('row' in fresh) {
        detail = fresh;
        render(fresh);
      } else {
        // No actions on it: the action bar's detail stays unset.
        detail = null;
        renderOffConfig(fresh);
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        content.hidden = true;
        offConfigContent.hidden = true;
        replaceContent(
          status.element,
          h(
            'div',
            { class: 'empty' },
            h('p', null, error.message),
            h('a', { href: '#/' }, 'All tracks'),
          ),
        );
        return;
      }
      status.failed(error, detail !== null);
    }
  });
  const actions = actionBar(track, () => detail, poller.refreshNow);
  replaceContent(
    content,
    summaryArea,
    actions.element,
    conditions.element,
    objects.element,
    history.element,
    revisions.element,
  );

  function render(fresh: TrackDetail): void {
    content.hidden = false;
    offConfigContent.hidden = true;
    const session = currentSession();
    if (changes.header([fresh.row, session])) {
      replaceContent(headerBadges, badges(fresh));
      replaceContent(summaryArea, summary(fresh));
      actions.render(fresh);
    }
    if (changes.conditions(fresh.row.status.conditions)) conditions.render(fresh.row.status);
    if (changes.objects(fresh.objects)) objects.render(fresh.objects);
    if (changes.history(fresh.history)) history.render(fresh.history);
    if (changes.revisions([fresh.revisions, fresh.row.status]))
      revisions.render(fresh.revisions, fresh.row.status);
  }

  function renderOffConfig(entry: OffConfigTrackJson): void {
    content.hidden = true;
    offConfigContent.hidden = false;
    // The header tracker is shared with render(): a track put back in the config redraws it.
    if (changes.header(entry)) {
      replaceContent(headerBadges, offConfigBadges(entry));
      replaceContent(offConfigArea, offConfigSummary(entry));
      offConfigConditions.render(entry);
    }
  }

  // Signing in or out changes which actions are enabled: re-render with the data at hand.
  const unsubscribe = onSessionChange(() => {
    if (detail !== null) render(detail);
  });

  return {
    title: track,
    element,
    refresh: poller.refreshNow,
    stop: () => {
      poller.stop();
      unsubscribe();
    },
  };
}

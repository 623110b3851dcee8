/** `#/tracks/<track>`: a track's state, actions, objects, history and revisions. */
import type { TrackDetail, TrackStatusJson } from '../src/dashboard/types.ts';
import { ApiError, getJson, trackPath } from './api.ts';
import { h, replaceContent, scrollBox, uniqueId } from './dom.ts';
import { revisionCode, revisionWithCommit, shortRevision, timeAgo } from './format.ts';
import { changeTracker, refreshStatus, startPolling, type Page } from './page.ts';
import { currentSession, onSessionChange } from './session.ts';
import { badge, busyBadge, conditionBadge, healthBadge, resultBadge, syncBadge } from './status.ts';
import { actionBar } from './track-actions.ts';
import { historySection } from './track-history.ts';
import { objectsSection } from './track-objects.ts';
import { revisionsSection } from './track-revisions.ts';

function badges(detail: TrackDetail): HTMLElement {
  const { status } = detail.row;
  return h(
    'div',
    { class: 'badges' },
    healthBadge(detail.row),
    syncBadge(status),
    busyBadge(status),
    status.suspended ? badge('Suspended', 'attention') : null,
    status.pinned !== null ? badge(`Pinned at ${shortRevision(status.pinned)}`, 'info') : null,
  );
}

function summary(detail: TrackDetail): HTMLElement {
  const { row } = detail;
  const { status } = row;
  const item = (term: string, ...value: (Node | string | null)[]): HTMLElement[] => [
    h('dt', null, term),
    h('dd', null, ...value),
  ];
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
  );

  const poller = startPolling(async (signal) => {
    try {
      const fresh = await getJson<TrackDetail>(trackPath(track), { signal });
      status.loaded();
      detail = fresh;
      render(fresh);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        content.hidden = true;
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

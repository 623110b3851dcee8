/** `#/`: every track in one table, with a state filter and a search box. */
import type { OverviewRow } from '../src/dashboard/types.ts';
import { getJson } from './api.ts';
import { h, replaceContent, scrollBox, uniqueId } from './dom.ts';
import { revisionCode, revisionWithCommit, shortRevision, timeAgo } from './format.ts';
import { changeTracker, refreshStatus, startPolling, type Page } from './page.ts';
import { isOffConfig } from './off-config.ts';
import {
  badge,
  busyBadge,
  healthBadge,
  offConfigBadge,
  resultBadge,
  suspendedBadge,
  syncBadge,
} from './status.ts';

const FILTERS = {
  all: { label: 'All', matches: () => true },
  'not-ready': { label: 'Not ready', matches: (row: OverviewRow) => row.ready !== 'True' },
  drifted: { label: 'Drifted', matches: (row: OverviewRow) => (row.drifted ?? 0) > 0 },
  suspended: { label: 'Suspended', matches: (row: OverviewRow) => row.status.suspended },
  pinned: { label: 'Pinned', matches: (row: OverviewRow) => row.status.pinned !== null },
} as const;
type FilterName = keyof typeof FILTERS;

/** Kept across visits of the page within the tab: back from a track, the same view. */
const view: { filter: FilterName; query: string } = { filter: 'all', query: '' };

function matchesQuery(row: OverviewRow, query: string): boolean {
  if (query === '') return true;
  const { status } = row;
  const haystack = [
    status.track,
    status.appliedRevision,
    status.desiredRevision,
    status.pinned,
    row.appliedCommit?.message,
    row.desiredCommit?.message,
  ];
  return haystack.some((value) => value?.toLowerCase().includes(query) === true);
}

export function trackHref(track: string): string {
  return `#/tracks/${encodeURIComponent(track)}`;
}

function revisionCell(row: OverviewRow): HTMLElement {
  const { status } = row;
  const cell = h(
    'td',
    { class: 'revision-cell' },
    revisionWithCommit(status.appliedRevision, row.appliedCommit),
  );
  if (status.desiredRevision !== null && status.desiredRevision !== status.appliedRevision) {
    cell.append(
      h(
        'div',
        { class: 'secondary-line' },
        'newest: ',
        revisionWithCommit(status.desiredRevision, row.desiredCommit),
      ),
    );
  }
  if (status.pinned !== null) {
    cell.append(h('div', { class: 'secondary-line' }, 'pinned at ', revisionCode(status.pinned)));
  }
  return cell;
}

function driftCell(row: OverviewRow): HTMLElement {
  if (row.drifted === null) return h('td', { class: 'muted' }, 'not checked');
  const checked = row.driftCheckedAt ? ['checked ', timeAgo(row.driftCheckedAt)] : [];
  return h(
    'td',
    null,
    row.drifted === 0 ? badge('None', 'success') : badge(`${row.drifted} drifted`, 'attention'),
    checked.length > 0 ? h('div', { class: 'secondary-line' }, ...checked) : null,
  );
}

function lastSyncCell(row: OverviewRow): HTMLElement {
  const last = row.lastSync;
  if (last === null) return h('td', { class: 'muted' }, 'never');
  return h(
    'td',
    null,
    timeAgo(last.appliedAt),
    last.result === 'failed' ? [' ', resultBadge('failed')] : null,
  );
}

function trackRow(row: OverviewRow): HTMLTableRowElement {
  const { status } = row;
  return h(
    'tr',
    null,
    h(
      'th',
      { scope: 'row' },
      h(
        'a',
        { href: trackHref(status.track), 'data-focus-key': `track:${status.track}` },
        status.track,
      ),
    ),
    h('td', null, healthBadge(row)),
    h(
      'td',
      null,
      h(
        'div',
        { class: 'badges' },
        // Nothing syncs a track off the config: what it is instead of whether it is in sync.
        offConfigBadge(status) ?? syncBadge(status),
        busyBadge(status),
        suspendedBadge(row),
        status.pinned !== null
          ? badge('Pinned', 'info', `pinned at ${shortRevision(status.pinned)}`)
          : null,
      ),
    ),
    revisionCell(row),
    driftCell(row),
    lastSyncCell(row),
    h(
      'td',
      { class: 'message-cell' },
      row.ready === 'True'
        ? null
        : [h('span', { class: 'reason' }, row.reason), ' ', h('span', null, row.message)],
    ),
  );
}

function summary(rows: readonly OverviewRow[]): string {
  const notReady = rows.filter(FILTERS['not-ready'].matches).length;
  const drifted = rows.filter(FILTERS.drifted.matches).length;
  const offConfig = rows.filter((row) => isOffConfig(row.status));
  const collecting = offConfig.filter((row) => row.status.collecting !== undefined).length;
  const held = offConfig.filter((row) => row.status.held !== undefined).length;
  const removed = offConfig.length - collecting - held;
  const parts = [`${rows.length} ${rows.length === 1 ? 'track' : 'tracks'}`];
  if (notReady > 0) parts.push(`${notReady} not ready`);
  if (drifted > 0) parts.push(`${drifted} drifted`);
  if (collecting > 0) parts.push(`${collecting} being collected`);
  if (held > 0) parts.push(`${held} held (document refused)`);
  if (removed > 0) parts.push(`${removed} removed from the config`);
  return parts.join(' · ');
}

export function overviewPage(): Page {
  let rows: readonly OverviewRow[] | null = null;
  const status = refreshStatus();
  const changed = changeTracker();
  const summaryLine = h('p', { class: 'page-summary' });
  const results = scrollBox('Tracks');

  const searchId = uniqueId('search');
  const search = h('input', {
    id: searchId,
    type: 'search',
    value: view.query,
    placeholder: 'Track, revision or message',
    autocomplete: 'off',
    oninput: () => {
      view.query = search.value;
      renderRows();
    },
  });
  const filterGroup = h(
    'fieldset',
    { class: 'segmented' },
    h('legend', { class: 'visually-hidden' }, 'Show'),
    Object.entries(FILTERS).map(([name, filter]) =>
      h(
        'label',
        null,
        h('input', {
          type: 'radio',
          name: 'overview-filter',
          value: name,
          checked: view.filter === name,
          onchange: () => {
            view.filter = name as FilterName;
            renderRows();
          },
        }),
        h('span', null, filter.label),
      ),
    ),
  );

  function renderRows(): void {
    if (rows === null) return;
    if (rows.length === 0) {
      replaceContent(
        results,
        h(
          'div',
          { class: 'empty' },
          h('h2', null, 'No tracks yet'),
          h(
            'p',
            null,
            'Tracks come from the tracks of driftless.yaml, or from GitTracks when the config reads them from a cluster.',
          ),
        ),
      );
      return;
    }
    const query = view.query.trim().toLowerCase();
    const shown = rows.filter(
      (row) => FILTERS[view.filter].matches(row) && matchesQuery(row, query),
    );
    const caption =
      shown.length === rows.length
        ? `All ${rows.length} tracks`
        : `${shown.length} of ${rows.length} tracks shown`;
    replaceContent(
      results,
      h(
        'table',
        { class: 'data-table overview-table' },
        h('caption', null, caption),
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Track', 'Health', 'Sync', 'Revision', 'Drift', 'Last sync', 'Last error'].map(
              (name) => h('th', { scope: 'col' }, name),
            ),
          ),
        ),
        h(
          'tbody',
          null,
          shown.length > 0
            ? shown.map(trackRow)
            : h(
                'tr',
                null,
                h(
                  'td',
                  { colspan: 7, class: 'empty-row' },
                  'No track matches this filter and search.',
                ),
              ),
        ),
      ),
    );
  }

  const heading = h('h1', { tabindex: -1 }, 'Tracks');
  const element = h(
    'div',
    { class: 'page overview-page' },
    h('div', { class: 'page-header' }, heading, summaryLine),
    status.element,
    h(
      'div',
      { class: 'toolbar', role: 'search' },
      filterGroup,
      h('div', { class: 'field field-inline' }, h('label', { for: searchId }, 'Search'), search),
    ),
    results,
  );

  const poller = startPolling(async (signal) => {
    try {
      const fresh = await getJson<OverviewRow[]>('api/overview', { signal });
      status.loaded();
      rows = fresh;
      if (changed(fresh)) {
        summaryLine.textContent = summary(fresh);
        renderRows();
      }
    } catch (error) {
      status.failed(error, rows !== null);
    }
  });

  return { title: 'Tracks', element, refresh: poller.refreshNow, stop: poller.stop };
}

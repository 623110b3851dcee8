/**
 * The track's stored revisions (rollback targets): each with its commit and
 * its rendered manifests, and the diff of any two.
 */
import type { StoredRevision, TrackStatusJson } from '../src/dashboard/types.ts';
import { getText, messageOf, trackPath } from './api.ts';
import { h, replaceContent, scrollBox, uniqueId } from './dom.ts';
import { authorName, firstLine, revisionCode, shortRevision, timeAgo } from './format.ts';
import { badge } from './status.ts';

/** The diff's lines, each marked by class and kept with its +/- prefix (not colour alone). */
export function diffLines(diff: string): HTMLElement[] {
  return diff
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => {
      const kind =
        line.startsWith('+++') || line.startsWith('---')
          ? 'file'
          : line.startsWith('@@')
            ? 'hunk'
            : line.startsWith('+')
              ? 'added'
              : line.startsWith('-')
                ? 'removed'
                : 'context';
      return h('span', { class: `diff-line diff-${kind}` }, `${line}\n`);
    });
}

function revisionLabel(stored: StoredRevision): string {
  return [shortRevision(stored.revision), stored.commit ? firstLine(stored.commit.message) : null]
    .filter((part) => part !== null)
    .join(' — ');
}

export function revisionsSection(track: string): {
  element: HTMLElement;
  render(revisions: readonly StoredRevision[], status: TrackStatusJson): void;
} {
  const headingId = uniqueId('revisions');
  const list = scrollBox('Stored revisions');
  const viewer = h('div', { class: 'viewer', 'aria-live': 'polite' });
  const fromId = uniqueId('compare-from');
  const toId = uniqueId('compare-to');
  const from = h('select', { id: fromId });
  const to = h('select', { id: toId });
  const compare = h(
    'form',
    { class: 'compare-form' },
    h('div', { class: 'field' }, h('label', { for: fromId }, 'From'), from),
    h('div', { class: 'field' }, h('label', { for: toId }, 'To'), to),
    h('button', { type: 'submit', class: 'button' }, 'Compare'),
  );
  const element = h(
    'section',
    { 'aria-labelledby': headingId },
    h('div', { class: 'section-header' }, h('h2', { id: headingId }, 'Revisions')),
    list,
    compare,
    viewer,
  );

  /** Loads text into the viewer; the newest request wins when clicks overlap. */
  let loading: AbortController | null = null;
  async function show(
    title: string,
    path: string,
    present: (text: string) => HTMLElement,
  ): Promise<void> {
    loading?.abort();
    const controller = new AbortController();
    loading = controller;
    replaceContent(viewer, h('p', { class: 'muted' }, `Loading ${title.toLowerCase()}…`));
    try {
      const text = await getText(path, controller.signal);
      if (controller.signal.aborted) return;
      replaceContent(
        viewer,
        h(
          'div',
          { class: 'viewer-header' },
          h('h3', null, title),
          h(
            'button',
            { type: 'button', class: 'button small', onclick: () => replaceContent(viewer) },
            'Close',
          ),
        ),
        present(text),
      );
    } catch (error) {
      if (controller.signal.aborted) return;
      replaceContent(
        viewer,
        h(
          'p',
          { class: 'notice notice-error' },
          `Could not load ${title.toLowerCase()}: ${messageOf(error)}`,
        ),
      );
    }
  }

  const scrollablePre = (label: string, ...content: (string | HTMLElement)[]): HTMLElement =>
    // Focusable so a keyboard can scroll it.
    h('pre', { class: 'code-block', tabindex: 0, 'aria-label': label }, ...content);

  compare.addEventListener('submit', (event) => {
    event.preventDefault();
    if (from.value === '' || to.value === '') return;
    const title = `Diff ${shortRevision(from.value)} → ${shortRevision(to.value)}`;
    void show(
      title,
      `${trackPath(track, 'diff')}?from=${encodeURIComponent(from.value)}&to=${encodeURIComponent(to.value)}`,
      (diff) =>
        diff === ''
          ? h('p', { class: 'empty' }, 'The two revisions render the same manifests.')
          : scrollablePre(title, ...diffLines(diff)),
    );
  });

  function fillSelect(
    select: HTMLSelectElement,
    revisions: readonly StoredRevision[],
    fallback: string | undefined,
  ): void {
    const chosen = select.value || fallback || '';
    replaceContent(
      select,
      revisions.map((stored) => h('option', { value: stored.revision }, revisionLabel(stored))),
    );
    if (revisions.some((stored) => stored.revision === chosen)) select.value = chosen;
  }

  function render(revisions: readonly StoredRevision[], status: TrackStatusJson): void {
    compare.hidden = revisions.length < 2;
    // Newest first: by default compare the one before the newest with the newest.
    fillSelect(from, revisions, revisions[1]?.revision);
    fillSelect(to, revisions, revisions[0]?.revision);
    replaceContent(
      list,
      revisions.length === 0
        ? h('p', { class: 'empty' }, 'No revision is stored yet.')
        : h(
            'table',
            { class: 'data-table revisions-table' },
            h('caption', { class: 'visually-hidden' }, 'Stored revisions, newest first'),
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Revision', 'Commit', 'Stored'].map((name) => h('th', { scope: 'col' }, name)),
                h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
              ),
            ),
            h(
              'tbody',
              null,
              revisions.map((stored) =>
                h(
                  'tr',
                  null,
                  h(
                    'th',
                    { scope: 'row' },
                    revisionCode(stored.revision),
                    h(
                      'div',
                      { class: 'badges' },
                      stored.revision === status.appliedRevision
                        ? badge('Applied', 'success')
                        : null,
                      stored.revision === status.pinned ? badge('Pinned', 'info') : null,
                      stored.revision === status.desiredRevision &&
                        stored.revision !== status.appliedRevision
                        ? badge('Newest', 'attention')
                        : null,
                    ),
                  ),
                  h(
                    'td',
                    null,
                    stored.commit
                      ? [
                          h('div', null, firstLine(stored.commit.message)),
                          h(
                            'div',
                            { class: 'secondary-line' },
                            authorName(stored.commit.author),
                            ' committed ',
                            timeAgo(stored.commit.date),
                          ),
                        ]
                      : h('span', { class: 'muted' }, 'commit not known'),
                  ),
                  h('td', null, timeAgo(stored.storedAt)),
                  h(
                    'td',
                    { class: 'row-actions' },
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'button small',
                        'data-focus-key': `manifests:${stored.revision}`,
                        'aria-label': `View manifests of ${shortRevision(stored.revision)}`,
                        onclick: () =>
                          void show(
                            `Manifests of ${shortRevision(stored.revision)}`,
                            trackPath(track, 'revisions', stored.revision, 'manifests'),
                            (yaml) =>
                              scrollablePre(`Manifests of ${shortRevision(stored.revision)}`, yaml),
                          ),
                      },
                      'View manifests',
                    ),
                  ),
                ),
              ),
            ),
          ),
    );
  }

  return { element, render };
}

/** The track's history as a timeline, newest first. */
import type { HistoryEntryJson } from '../src/dashboard/types.ts';
import { h, replaceContent, uniqueId } from './dom.ts';
import { absoluteTime, duration, revisionCode, timeAgo } from './format.ts';
import { resultBadge } from './status.ts';

function entry(item: HistoryEntryJson): HTMLElement {
  const took = duration(item.durationMs);
  return h(
    'li',
    { class: `timeline-entry result-${item.result}` },
    h('span', { class: 'timeline-marker', 'aria-hidden': 'true' }),
    h(
      'div',
      { class: 'timeline-body' },
      h(
        'div',
        { class: 'timeline-line' },
        resultBadge(item.result),
        h('span', null, item.trigger),
        item.by ? h('span', null, 'by ', h('strong', null, item.by)) : null,
        item.revision ? revisionCode(item.revision) : null,
        took ? h('span', { class: 'muted' }, `took ${took}`) : null,
        h(
          'span',
          { class: 'timeline-time muted' },
          timeAgo(item.appliedAt),
          ` (${absoluteTime(item.appliedAt)})`,
        ),
      ),
      item.error ? h('pre', { class: 'timeline-error' }, item.error) : null,
    ),
  );
}

export function historySection(): {
  element: HTMLElement;
  render(history: readonly HistoryEntryJson[]): void;
} {
  const headingId = uniqueId('history');
  const list = h('div');
  const element = h(
    'section',
    { 'aria-labelledby': headingId },
    h('div', { class: 'section-header' }, h('h2', { id: headingId }, 'History')),
    list,
  );
  return {
    element,
    render(history) {
      replaceContent(
        list,
        history.length === 0
          ? h('p', { class: 'empty' }, 'Nothing happened to this track yet.')
          : h(
              'ol',
              { class: 'timeline', 'aria-label': 'History, newest first' },
              history.map(entry),
            ),
      );
    },
  };
}

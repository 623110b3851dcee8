/** How values read on the page: short revisions, relative times, durations. */
import type { CommitInfo } from '../src/dashboard/types.ts';
import { h } from './dom.ts';

/** Revisions are commit shas, a chart's with `+<digest>`: 12 characters of the sha tell them apart. */
export function shortRevision(revision: string): string {
  const [commit = revision, suffix] = revision.split('+');
  return suffix === undefined
    ? commit.slice(0, 12)
    : `${commit.slice(0, 12)}+${suffix.slice(0, 7)}`;
}

export function firstLine(text: string): string {
  return text.split('\n', 1)[0]?.trim() ?? '';
}

/** `Name <email>` → `Name`. */
export function authorName(author: string): string {
  return author.replace(/\s*<[^>]*>\s*$/, '').trim() || author;
}

const UNITS: readonly [limitSeconds: number, unitSeconds: number, name: string][] = [
  [60, 1, 's'],
  [3600, 60, 'min'],
  [86400, 3600, 'h'],
  [86400 * 60, 86400, 'days'],
  [Infinity, 86400 * 30, 'months'],
];

/** `3 min ago`; times a little in the future (clock skew) read as `just now`. */
export function relativeTime(iso: string, now: number = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const seconds = Math.round((now - then) / 1000);
  if (seconds < 10) return 'just now';
  for (const [limit, unit, name] of UNITS) {
    if (seconds < limit) {
      const count = Math.floor(seconds / unit);
      return `${count} ${count === 1 && name === 'days' ? 'day' : count === 1 && name === 'months' ? 'month' : name} ago`;
    }
  }
  return iso;
}

export function absoluteTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/**
 * A `<time>` reading "3 min ago", with the exact time as its title;
 * refreshRelativeTimes keeps the words current between renders.
 */
export function timeAgo(iso: string | null | undefined): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, 'never');
  return h(
    'time',
    { datetime: iso, title: absoluteTime(iso), 'data-relative': '' },
    relativeTime(iso),
  );
}

export function refreshRelativeTimes(root: ParentNode = document): void {
  const now = Date.now();
  for (const element of root.querySelectorAll<HTMLTimeElement>('time[data-relative]')) {
    const text = relativeTime(element.dateTime, now);
    if (element.textContent !== text) element.textContent = text;
  }
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
}

/** A revision as code, with the full id as its title. */
export function revisionCode(revision: string): HTMLElement {
  return h('code', { class: 'sha', title: revision }, shortRevision(revision));
}

/** A revision with its commit's first line and author, when known. */
export function revisionWithCommit(
  revision: string | null,
  commit: CommitInfo | null,
): HTMLElement {
  if (revision === null) return h('span', { class: 'muted' }, 'none');
  return h(
    'span',
    { class: 'revision' },
    revisionCode(revision),
    commit
      ? [
          ' ',
          h('span', { class: 'commit-message' }, firstLine(commit.message)),
          ' ',
          h('span', { class: 'muted commit-author' }, `by ${authorName(commit.author)}`),
        ]
      : null,
  );
}

/** The changeset of a sync for people: a table of objects and a count per action. */
import type { ChangeAction, ChangeSetEntry } from '../apply/changeset.ts';
import type { Palette } from './colours.ts';
import { formatTable } from './table.ts';

/** Actions in the order people read a summary: what changed, then what did not, then failures. */
const ACTION_ORDER: readonly ChangeAction[] = [
  'created',
  'configured',
  'recreated',
  'deleted',
  'unchanged',
  'skipped',
  'failed',
];

function colourAction(action: ChangeAction, colours: Palette): string {
  switch (action) {
    case 'created':
      return colours.green(action);
    case 'configured':
    case 'recreated':
      return colours.yellow(action);
    case 'deleted':
      return colours.magenta(action);
    case 'failed':
      return colours.red(action);
    case 'unchanged':
    case 'skipped':
      return colours.dim(action);
  }
}

/** How many objects got each action, in {@link ACTION_ORDER}, leaving out actions no object got. */
export function countActions(changeset: readonly ChangeSetEntry[]): [ChangeAction, number][] {
  const counts = new Map<ChangeAction, number>();
  for (const entry of changeset) counts.set(entry.action, (counts.get(entry.action) ?? 0) + 1);
  return ACTION_ORDER.filter((a) => counts.has(a)).map((a) => [a, counts.get(a) ?? 0]);
}

/** `3 objects: 1 created, 2 unchanged`. */
export function formatCounts(changeset: readonly ChangeSetEntry[], colours: Palette): string {
  const objects = `${changeset.length} ${changeset.length === 1 ? 'object' : 'objects'}`;
  const counts = countActions(changeset).map(([a, n]) => `${n} ${colourAction(a, colours)}`);
  return counts.length === 0 ? objects : `${objects}: ${counts.join(', ')}`;
}

/**
 * An entry's error for a line or row that shows its subject already: the error starts with the
 * subject (ChangeSetEntry), which would be said twice. Undefined when the entry has no error.
 */
export function errorBesideSubject(
  entry: Pick<ChangeSetEntry, 'subject' | 'error'>,
): string | undefined {
  const prefix = `${entry.subject}: `;
  return entry.error?.startsWith(prefix) ? entry.error.slice(prefix.length) : entry.error;
}

/** The SUBJECT / ACTION / ERROR table (skip reasons in the last column too), then the counts. */
export function formatChangeset(changeset: readonly ChangeSetEntry[], colours: Palette): string {
  if (changeset.length === 0) return formatCounts(changeset, colours);
  const rows = changeset.map((entry) => [
    entry.subject,
    colourAction(entry.action, colours),
    errorBesideSubject(entry) ?? entry.reason ?? '',
  ]);
  return `${formatTable(['SUBJECT', 'ACTION', 'ERROR'], rows)}\n${formatCounts(changeset, colours)}`;
}

/**
 * The track's objects grouped by kind, and for each object out of sync its
 * drift: per changed field what the cluster has and what Git has, and which
 * field managers changed it.
 */
import type { ObservedObject, ObservedObjects } from '../src/dashboard/types.ts';
import { h, replaceContent, scrollBox, uniqueId } from './dom.ts';
import { timeAgo } from './format.ts';
import { objectHealthBadge, objectSyncBadge } from './status.ts';

type PatchOperation = NonNullable<ObservedObject['patch']>[number];

/** `/spec/template/spec/containers/0/image` → `spec.template.spec.containers[0].image`. */
export function readablePath(pointer: string): string {
  if (pointer === '') return '(the whole object)';
  return pointer
    .split('/')
    .slice(1)
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((key, index) =>
      /^\d+$/.test(key)
        ? `[${key}]`
        : /^[A-Za-z_][\w-]*$/.test(key)
          ? `${index === 0 ? '' : '.'}${key}`
          : `[${JSON.stringify(key)}]`,
    )
    .join('');
}

/** A value as it reads in YAML-ish text: strings quoted (spaces show), structures indented. */
export function readableValue(value: unknown): string {
  if (value === undefined) return '(nothing)';
  return typeof value === 'object' && value !== null
    ? JSON.stringify(value, null, 2)
    : JSON.stringify(value);
}

function valueElement(value: unknown, known: boolean): HTMLElement {
  if (!known) return h('em', { class: 'muted' }, 'a different value');
  const text = readableValue(value);
  return text.includes('\n')
    ? h('pre', { class: 'value' }, text)
    : h('code', { class: 'value' }, text);
}

interface FieldChange {
  readonly path: string;
  readonly cluster: { known: boolean; value: unknown };
  readonly git: { known: boolean; value: unknown };
}

/**
 * The patch takes the cluster's object to Git's. RFC 6902 carries only the
 * new value, so the cluster's is known only where a `test` op (an
 * invertible patch) states it; otherwise it reads "a different value".
 */
export function fieldChanges(patch: readonly PatchOperation[]): FieldChange[] {
  const tested = new Map<string, unknown>();
  const changes: FieldChange[] = [];
  for (const operation of patch) {
    const path = readablePath(operation.path);
    switch (operation.op) {
      case 'test':
        tested.set(operation.path, operation.value);
        break;
      case 'replace':
        changes.push({
          path,
          cluster: { known: tested.has(operation.path), value: tested.get(operation.path) },
          git: { known: true, value: operation.value },
        });
        break;
      case 'add':
        changes.push({
          path,
          cluster: { known: true, value: undefined },
          git: { known: true, value: operation.value },
        });
        break;
      case 'remove':
        changes.push({
          path,
          cluster: { known: tested.has(operation.path), value: tested.get(operation.path) },
          git: { known: true, value: undefined },
        });
        break;
      default:
        // move and copy: not produced by a comparison, shown as what they say.
        changes.push({
          path,
          cluster: { known: false, value: undefined },
          git: {
            known: true,
            value: `${operation.op} from ${'from' in operation ? readablePath(operation.from) : '?'}`,
          },
        });
    }
  }
  return changes;
}

function driftDetails(object: ObservedObject, open: Set<string>): HTMLElement {
  const changes = fieldChanges(object.patch ?? []);
  const by = object.changedBy ?? [];
  const details = h(
    'details',
    { class: 'drift', open: open.has(object.subject) },
    h(
      'summary',
      { 'data-focus-key': `drift:${object.subject}` },
      `What drifted: ${changes.length} ${changes.length === 1 ? 'field' : 'fields'}`,
      by.length > 0 ? `, changed by ${by.join(', ')}` : '',
    ),
    h(
      'ul',
      { class: 'drift-changes' },
      changes.map((change) =>
        h(
          'li',
          null,
          h('code', { class: 'drift-path' }, change.path),
          h(
            'div',
            { class: 'drift-values' },
            h(
              'span',
              { class: 'drift-side drift-cluster' },
              'cluster has ',
              valueElement(change.cluster.value, change.cluster.known),
            ),
            h('span', { class: 'drift-arrow', 'aria-hidden': 'true' }, '→'),
            h(
              'span',
              { class: 'drift-side drift-git' },
              h('span', { class: 'visually-hidden' }, ', '),
              'Git has ',
              valueElement(change.git.value, change.git.known),
            ),
          ),
        ),
      ),
    ),
  );
  // Kept across refreshes, which rebuild the table.
  details.addEventListener('toggle', () => {
    if (details.open) open.add(object.subject);
    else open.delete(object.subject);
  });
  return details;
}

/** `Kind/namespace/name` → `namespace/name`. */
function objectName(object: ObservedObject): string {
  const prefix = `${object.kind}/`;
  return object.subject.startsWith(prefix) ? object.subject.slice(prefix.length) : object.subject;
}

function kindTable(
  kind: string,
  objects: readonly ObservedObject[],
  open: Set<string>,
): HTMLElement {
  return h(
    'table',
    { class: 'data-table objects-table' },
    h('caption', null, kind, h('span', { class: 'count' }, ` ${objects.length}`)),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['Object', 'Sync', 'Health', 'Message'].map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h(
      'tbody',
      null,
      objects.map((object) => {
        const row = h(
          'tr',
          null,
          h(
            'th',
            { scope: 'row', class: 'object-name' },
            objectName(object),
            h('div', { class: 'secondary-line' }, object.apiVersion),
          ),
          h('td', null, objectSyncBadge(object.sync)),
          h('td', null, objectHealthBadge(object.health)),
          h('td', { class: 'message-cell' }, object.message),
        );
        if (object.sync !== 'OutOfSync' || (object.patch ?? []).length === 0) return row;
        return [
          row,
          h('tr', { class: 'drift-row' }, h('td', { colspan: 4 }, driftDetails(object, open))),
        ];
      }),
    ),
  );
}

function countsLine(objects: readonly ObservedObject[]): string {
  const count = (sync: ObservedObject['sync']): number =>
    objects.filter((o) => o.sync === sync).length;
  const parts = [`${objects.length} ${objects.length === 1 ? 'object' : 'objects'}`];
  const outOfSync = count('OutOfSync');
  const missing = count('Missing');
  const failed = count('Failed');
  if (outOfSync > 0) parts.push(`${outOfSync} out of sync`);
  if (missing > 0) parts.push(`${missing} missing`);
  if (failed > 0) parts.push(`${failed} failed`);
  return parts.join(' · ');
}

export interface ObjectsSection {
  readonly element: HTMLElement;
  render(objects: ObservedObjects): void;
}

export function objectsSection(): ObjectsSection {
  const open = new Set<string>();
  let latest: ObservedObjects | null = null;
  const headingId = uniqueId('objects');
  const meta = h('p', { class: 'section-meta' });
  const tables = h('div', { class: 'objects' });
  const filterId = uniqueId('out-of-sync-only');
  const onlyOutOfSync = h('input', {
    type: 'checkbox',
    id: filterId,
    onchange: () => latest && render(latest),
  });
  const element = h(
    'section',
    { 'aria-labelledby': headingId },
    h(
      'div',
      { class: 'section-header' },
      h('h2', { id: headingId }, 'Objects'),
      h(
        'div',
        { class: 'checkbox' },
        onlyOutOfSync,
        h('label', { for: filterId }, 'Out of sync only'),
      ),
    ),
    meta,
    tables,
  );

  function render(observed: ObservedObjects): void {
    latest = observed;
    replaceContent(
      meta,
      countsLine(observed.objects),
      ' · ',
      observed.source === 'live'
        ? 'read live from the cluster'
        : 'recorded by the last drift check',
      observed.observedAt ? [' ', timeAgo(observed.observedAt)] : null,
      observed.error
        ? h(
            'span',
            { class: 'notice notice-error block' },
            `Reading the cluster failed: ${observed.error}`,
          )
        : null,
    );
    const shown = onlyOutOfSync.checked
      ? observed.objects.filter((object) => object.sync !== 'InSync')
      : observed.objects;
    const byKind = new Map<string, ObservedObject[]>();
    for (const object of shown) {
      const list = byKind.get(object.kind) ?? [];
      list.push(object);
      byKind.set(object.kind, list);
    }
    const kinds = [...byKind.keys()].sort((a, b) => a.localeCompare(b));
    replaceContent(
      tables,
      kinds.length === 0
        ? h(
            'p',
            { class: 'empty' },
            observed.objects.length === 0 ? 'No objects observed yet.' : 'Every object is in sync.',
          )
        : kinds.map((kind) =>
            scrollBox(
              `${kind} objects`,
              kindTable(
                kind,
                [...(byKind.get(kind) ?? [])].sort((a, b) => a.subject.localeCompare(b.subject)),
                open,
              ),
            ),
          ),
    );
  }

  return { element, render };
}

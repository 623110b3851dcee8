import { EVENT_ID, getScalarValue, type Event } from 'js-yaml';
import { ManifestTooLargeError } from './errors.ts';

/** Where one document of a file starts, and where the items of a top-level `items:` list start. */
export interface DocumentPositions {
  /** Offset of the document's root node in the source; -1 for an empty document. */
  readonly start: number;
  /** Offsets of the elements of the root mapping's `items` sequence, when there is one. */
  readonly itemStarts: readonly number[] | undefined;
}

/** Alias expansion used so far across a whole render, shared by every file. */
export interface AliasBudget {
  used: number;
  readonly limit: number;
}

/** What {@link scanEvents} needs besides the events. */
export interface ScanContext {
  readonly source: string;
  readonly file: string;
  readonly budget: AliasBudget;
  readonly maxDepth: number;
  readonly lineOf: (offset: number) => number;
}

interface Frame {
  readonly kind: 'document' | 'mapping' | 'sequence';
  readonly anchor: string | undefined;
  weight: number;
  height: number;
  children: number;
  /** Set on the root mapping: the key just read was `items`. */
  nextIsItems: boolean;
  /** Set on the root `items` sequence: collects its elements' offsets. */
  itemStarts: number[] | undefined;
  /** Set on a document frame. */
  positions: { start: number; itemStarts: number[] | undefined } | undefined;
}

/**
 * The smallest of a node's three offsets that is set (>= 0), or -1. Three
 * arguments, not a rest array filtered and spread: it runs for every event
 * of every file, before V8 has optimised anything (~2.5 ms of a 500-file
 * render in a fresh process, CPU profile).
 */
function firstOffset(a: number, b: number, c: number): number {
  let first = -1;
  if (a >= 0) first = a;
  if (b >= 0 && (first < 0 || b < first)) first = b;
  if (c >= 0 && (first < 0 || c < first)) first = c;
  return first;
}

/**
 * Walks a file's parser events once, before anything is constructed, to
 * (1) record where each document and each `items` element starts, and
 * (2) measure what aliases would expand to. js-yaml shares aliased values by
 * reference, so loading a "billion laughs" file is cheap, but anything that
 * later walks or serializes the objects would expand it exponentially; the
 * budget stops that here, in time linear in the file's size.
 */
export function scanEvents(events: readonly Event[], context: ScanContext): DocumentPositions[] {
  const { source, file, budget, maxDepth, lineOf } = context;
  const documents: DocumentPositions[] = [];
  const stack: Frame[] = [];
  // Anchor name -> expanded weight and height; anchors are scoped to one document.
  let weights = new Map<string, number>();
  let heights = new Map<string, number>();

  const anchorOf = (start: number, end: number): string | undefined =>
    start >= 0 ? source.slice(start, end) : undefined;

  const enterChild = (parent: Frame | undefined, offset: number): void => {
    if (parent === undefined) return;
    if (parent.positions !== undefined) parent.positions.start = offset;
    parent.itemStarts?.push(offset);
    if (parent.kind === 'mapping' && parent.children % 2 === 0) parent.nextIsItems = false;
  };

  const leaveChild = (parent: Frame | undefined, weight: number, height: number): void => {
    if (parent === undefined) return;
    parent.weight += weight;
    parent.height = Math.max(parent.height, height);
    parent.children += 1;
  };

  const remember = (anchor: string | undefined, weight: number, height: number): void => {
    if (anchor === undefined) return;
    weights.set(anchor, weight);
    heights.set(anchor, height);
  };

  for (const event of events) {
    const parent = stack.at(-1);
    switch (event.type) {
      case EVENT_ID.DOCUMENT: {
        weights = new Map();
        heights = new Map();
        const positions = { start: -1, itemStarts: undefined };
        documents.push(positions);
        stack.push(frame('document', undefined, positions));
        break;
      }
      case EVENT_ID.MAPPING:
      case EVENT_ID.SEQUENCE: {
        const start = firstOffset(event.start, event.anchorStart, event.tagStart);
        enterChild(parent, start);
        const kind = event.type === EVENT_ID.MAPPING ? 'mapping' : 'sequence';
        const child = frame(kind, anchorOf(event.anchorStart, event.anchorEnd), undefined);
        if (kind === 'sequence' && parent?.nextIsItems === true && parent.children % 2 === 1) {
          child.itemStarts = [];
          const documentFrame = stack.at(-2);
          if (documentFrame?.positions !== undefined) {
            documentFrame.positions.itemStarts = child.itemStarts;
          }
        }
        stack.push(child);
        break;
      }
      case EVENT_ID.SCALAR: {
        const start = firstOffset(event.valueStart, event.anchorStart, event.tagStart);
        enterChild(parent, start);
        const isRootKey =
          parent?.kind === 'mapping' &&
          parent.children % 2 === 0 &&
          stack.at(-2)?.kind === 'document';
        if (isRootKey && event.valueStart >= 0) {
          parent.nextIsItems = getScalarValue(source, event) === 'items';
        }
        const weight = 1 + Math.max(0, event.valueEnd - event.valueStart);
        remember(anchorOf(event.anchorStart, event.anchorEnd), weight, 0);
        leaveChild(parent, weight, 0);
        break;
      }
      case EVENT_ID.ALIAS: {
        enterChild(parent, event.anchorStart);
        const name = source.slice(event.anchorStart, event.anchorEnd);
        // An unknown alias is a parse error the constructor reports; count it as one node.
        const weight = weights.get(name) ?? 1;
        budget.used += weight;
        if (budget.used > budget.limit) {
          throw new ManifestTooLargeError(
            file,
            lineOf(event.anchorStart),
            'maxAliasExpansion',
            `YAML aliases expand beyond the limit of ${budget.limit} (alias *${name}); refusing a possible "billion laughs" document`,
          );
        }
        leaveChild(parent, weight, heights.get(name) ?? 0);
        break;
      }
      case EVENT_ID.POP: {
        const done = stack.pop();
        if (done === undefined) break;
        if (done.kind === 'document') {
          if (done.height > maxDepth) {
            throw new ManifestTooLargeError(
              file,
              lineOf(done.positions?.start ?? 0),
              'maxDepth',
              `document nests deeper than ${maxDepth} levels once aliases are expanded`,
            );
          }
          break;
        }
        const height = done.height + 1;
        remember(done.anchor, done.weight, height);
        leaveChild(stack.at(-1), done.weight, height);
        break;
      }
    }
  }
  return documents;
}

function frame(
  kind: Frame['kind'],
  anchor: string | undefined,
  positions: Frame['positions'],
): Frame {
  return {
    kind,
    anchor,
    weight: 1,
    height: 0,
    children: 0,
    nextIsItems: false,
    itemStarts: undefined,
    positions,
  };
}

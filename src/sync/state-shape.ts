/**
 * The shape check of a stored track state. The store only guarantees JSON; a
 * document damaged at rest, or written by another version of Driftless with
 * another shape, would otherwise surface as a TypeError deep inside a sync
 * (`conditions.find is not a function`) — or worse, as an inventory that
 * prunes the wrong objects. It is refused here instead, naming the field.
 * Fields this version does not know are kept: a newer writer may add some.
 */
import { StateCorruptError } from '../store/errors.ts';

type Expected = 'string' | 'number' | 'boolean' | 'list' | 'mapping';

/** Each known field: what it must be, and whether null is allowed. Absent is always allowed. */
const FIELDS: Readonly<Record<string, readonly [Expected, 'nullable'?]>> = {
  desiredRevision: ['string', 'nullable'],
  desiredResolvedAt: ['string', 'nullable'],
  renderedWith: ['string', 'nullable'],
  appliedRevision: ['string', 'nullable'],
  pinned: ['string', 'nullable'],
  unloadedRevision: ['string', 'nullable'],
  conditions: ['list'],
  objectsDiscovered: ['number'],
  objectsApplied: ['number'],
  objectsIgnored: ['number'],
  objectsInSync: ['number'],
  ignoredObjects: ['mapping'],
  inventory: ['list'],
  driftCheckedAt: ['string', 'nullable'],
  capabilities: ['mapping', 'nullable'],
  failedObjects: ['mapping'],
  cluster: ['string'],
  suspended: ['boolean'],
  notified: ['mapping'],
  observed: ['mapping', 'nullable'],
  commits: ['mapping'],
  applying: ['list', 'nullable'],
  applyLease: ['mapping', 'nullable'],
  reencrypted: ['mapping'],
  unsyncedWriteBacks: ['list'],
};

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  return typeof value === 'object' ? 'mapping' : typeof value;
}

function article(kind: string): string {
  return kind === 'null' ? 'null' : `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;
}

/**
 * `value` (a stored state document of `track`, or undefined when there is
 * none) when its known fields have their types; StateCorruptError naming the
 * first field that does not, otherwise. Lists must hold mappings.
 */
export function checkedStateValue(track: string, value: unknown): object | undefined {
  if (value === undefined) return undefined;
  const fail = (what: string, found: unknown, expected: string): never => {
    throw new StateCorruptError(
      `${track}: state ${what} is ${article(kindOf(found))}, expected ${article(expected)} (damaged, or written by another version of Driftless)`,
    );
  };
  if (kindOf(value) !== 'mapping') return fail('document', value, 'mapping');
  for (const [field, [expected, nullable]] of Object.entries(FIELDS)) {
    const found = (value as Record<string, unknown>)[field];
    if (found === undefined || (found === null && nullable === 'nullable')) continue;
    if (kindOf(found) !== expected) fail(`field ${field}`, found, expected);
    if (expected === 'list') {
      (found as unknown[]).forEach((item, index) => {
        if (kindOf(item) !== 'mapping') fail(`field ${field}[${index}]`, item, 'mapping');
      });
    }
  }
  return value as object;
}

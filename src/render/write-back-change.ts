/**
 * What two-way sync hands from the drift check (apply side) to the
 * write-back (fetch side): one object's fields as the cluster has them and
 * as Git had them, and where in Git the object is written.
 */

import type { RenderedObject } from './types.ts';

/** One object's changes made in the cluster, to commit to Git (`syncTo: git`). */
export interface WriteBackChange {
  readonly subject: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  /** The file the object came from, and the 1-based line its document starts at. */
  readonly file: string;
  readonly line: number;
  /**
   * A whole object to add (`writeBack.include`): it is not in Git yet, and
   * `file` is where it goes; `fields` is then empty.
   */
  readonly add?: Readonly<Record<string, unknown>>;
  /**
   * The whole file again (a SOPS-encrypted Secret, encrypted anew in the
   * apply step), replacing `base`, the file as the compared revision had
   * it; `fields` is then empty. Ciphertext only: never a plaintext. The
   * Secrets of one file changed together each carry the same file, holding
   * all their values (one encryption).
   */
  readonly replace?: { readonly content: string; readonly base: string };
  /**
   * Fields by JSON pointer: the cluster's value (absent: the cluster removed
   * it) and Git's at the applied revision (absent: Git did not set it).
   */
  readonly fields: readonly {
    readonly path: string;
    readonly value?: unknown;
    readonly base?: unknown;
  }[];
}

/** Which object a change is of, and where Git has it: the part every change of a rendered object shares. */
export function changeOf(
  object: RenderedObject,
): Pick<
  WriteBackChange,
  'subject' | 'apiVersion' | 'kind' | 'name' | 'namespace' | 'file' | 'line'
> {
  return {
    subject: object.subject,
    apiVersion: String(object.manifest['apiVersion']),
    kind: object.kind,
    name: object.name,
    ...(object.namespace === undefined ? {} : { namespace: object.namespace }),
    file: object.source.file,
    line: object.source.line,
  };
}

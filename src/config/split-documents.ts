import { describeValue } from './describe-value.ts';
import { isGitTrack } from './git-track.ts';
import type { LocatedIssue, PathSegment } from './path.ts';

/** A YAML document that is a mapping, with its position in the file. */
export interface IndexedDocument {
  readonly index: number;
  readonly value: Record<string, unknown>;
}

/** The documents of a config file, sorted by role. */
export interface SplitDocuments {
  /** The driftless configuration: the first document that is not a GitTrack. */
  readonly config?: IndexedDocument;
  readonly gitTracks: IndexedDocument[];
  readonly issues: LocatedIssue[];
  /** Where a document's problems are reported: `documents[i]`, or the root in a one-document file. */
  readonly locate: (index: number) => PathSegment[];
}

/**
 * Sorts YAML documents into the configuration and GitTracks. Anything else
 * (a second configuration, a Deployment pasted by mistake) is an error rather
 * than ignored, since ignoring it would silently drop what the user meant.
 */
export function splitDocuments(documents: readonly unknown[]): SplitDocuments {
  // With one document, `documents[0]` in messages would only confuse.
  const locate = (index: number): PathSegment[] =>
    documents.length > 1 ? ['documents', index] : [];
  const issues: LocatedIssue[] = [];
  const gitTracks: IndexedDocument[] = [];
  let config: IndexedDocument | undefined;
  documents.forEach((value, index) => {
    if (value === null || value === undefined) return; // empty document, e.g. a trailing `---`
    if (typeof value !== 'object' || Array.isArray(value)) {
      issues.push({ path: locate(index), message: `${describeValue(value)} is not a mapping` });
      return;
    }
    const document = value as Record<string, unknown>;
    if (isGitTrack(document)) {
      gitTracks.push({ index, value: document });
    } else if ('apiVersion' in document || 'kind' in document) {
      issues.push({
        path: locate(index),
        message: `apiVersion ${describeValue(document['apiVersion'])}, kind ${describeValue(document['kind'])} is not supported; only faros.pusher.com/v1alpha1 GitTrack documents may accompany the configuration`,
      });
    } else if (config) {
      issues.push({
        path: locate(index),
        message: `is a second configuration document; keep all settings in documents[${config.index}]`,
      });
    } else {
      config = { index, value: document };
    }
  });
  return { config, gitTracks, issues, locate };
}

/**
 * Tracks read at run time (`tracksFrom`): Faros GitTrack documents, from a
 * cluster or from a Git repository, validated into tracks with the same
 * schema as the config's own — plus the rules that keep whoever can write a
 * GitTrack inside what the source allows (DESIGN.md "Lifecycle"):
 *
 * - a GitTrack reaches only its source's cluster; an annotation naming
 *   another one is refused, not ignored;
 * - a local path or file:// repository is refused unless the source allows it;
 * - a deploy key maps to a secret under the source's `deployKeySecrets`
 *   prefix, completed with the GitTrack's namespace (as Faros reads the
 *   Secret from that namespace), so no GitTrack can name another secret —
 *   the fetch step's own credentials least of all.
 *
 * Each problem belongs to one GitTrack and leaves the others running.
 */
import {
  CLUSTER_ANNOTATION,
  envName,
  gitTrackPathMapper,
  gitTrackSchema,
  isGitTrack,
} from './git-track.ts';
import { mapGitTrack, type DeployKeySecret } from './git-track.ts';
import { describeValue } from './describe-value.ts';
import { toTrack } from './parse-config.ts';
import { formatPath } from './path.ts';
import { classifyRepository } from './repository-location.ts';
import { trackSchema } from './schema.ts';
import type { Track, TrackOrigin, TracksFrom } from './types.ts';
import { toLocatedIssues } from './zod-issues.ts';

/** One document offered as a track. */
export interface RunTimeDocument {
  readonly value: unknown;
  /** For messages: `GitTrack apps/web`, `tracks/web.yaml (document 2)`. */
  readonly where: string;
  readonly origin: TrackOrigin;
}

/** Why one document gave no track. */
export interface RunTimeProblem {
  readonly where: string;
  readonly origin: TrackOrigin;
  readonly message: string;
}

/** The tracks of a source's documents, and what was refused. */
export interface RunTimeTracks {
  readonly tracks: Track[];
  readonly problems: RunTimeProblem[];
}

const REPORT = { reportInput: true } as const;

const SECRET_NAME = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

/**
 * Validates `documents` of `source` into tracks. `taken`: names already in
 * use (the config's tracks, earlier sources); a document claiming one is
 * refused, as is the second of two documents with the same name.
 */
export function runTimeTracks(
  source: TracksFrom,
  documents: readonly RunTimeDocument[],
  taken: ReadonlySet<string>,
): RunTimeTracks {
  const tracks: Track[] = [];
  const problems: RunTimeProblem[] = [];
  const names = new Set(taken);
  for (const document of documents) {
    const refuse = (message: string): void => {
      problems.push({ where: document.where, origin: document.origin, message });
    };
    const result = oneTrack(source, document);
    if ('problems' in result) {
      refuse(result.problems.join('; '));
    } else if (names.has(result.track.name)) {
      refuse(`metadata.name: track ${describeValue(result.track.name)} already exists`);
    } else {
      names.add(result.track.name);
      tracks.push({ ...result.track, origin: document.origin });
    }
  }
  return { tracks, problems };
}

function oneTrack(
  source: TracksFrom,
  document: RunTimeDocument,
): { track: Track } | { problems: string[] } {
  const { value } = document;
  if (!isMapping(value) || !isGitTrack(value)) {
    return {
      problems: [`is not a Faros GitTrack (apiVersion faros.pusher.com/v1alpha1, kind GitTrack)`],
    };
  }
  const problems: string[] = [];
  const shape = gitTrackSchema.safeParse(value, REPORT);
  if (!shape.success) {
    problems.push(...formatted(toLocatedIssues(shape.error.issues, (p) => [...p])));
  }
  const metadata = isMapping(value['metadata']) ? value['metadata'] : {};
  const spec = isMapping(value['spec']) ? value['spec'] : {};
  const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : 'default';
  const mapping = mapGitTrack({ metadata, spec }, deployKeySecrets(source, namespace));
  problems.push(...formatted(mapping.issues));
  const annotated = mapping.track['cluster'];
  if (annotated !== undefined && annotated !== source.cluster) {
    problems.push(
      `metadata.annotations["${CLUSTER_ANNOTATION}"]: ${describeValue(annotated)} is not allowed: tracks of this source reach only cluster "${source.cluster}"`,
    );
  }
  const repository = spec['repository'];
  if (typeof repository === 'string' && !source.allowLocalRepositories) {
    const kind = (classifyRepository(repository) as { kind?: string }).kind;
    if (kind === 'path' || kind === 'file') {
      problems.push(
        `spec.repository: ${describeValue(repository)} is a local repository, which tracks read at run time may not use (tracksFrom[].allowLocalRepositories)`,
      );
    }
  }
  const parsed = trackSchema.safeParse({ ...mapping.track, cluster: undefined }, REPORT);
  if (!parsed.success) {
    problems.push(...formatted(toLocatedIssues(parsed.error.issues, gitTrackPathMapper([]))));
  }
  if (problems.length > 0 || !parsed.success) return { problems };
  return { track: toTrack(parsed.data, source.cluster) };
}

/**
 * Deploy keys under the source's prefix: `env:` prefixes get
 * `<NAMESPACE>_<SECRET>_<KEY>` (upper case), others `<namespace>/<secret>/<key>`.
 */
function deployKeySecrets(source: TracksFrom, namespace: string): DeployKeySecret {
  const prefix = source.deployKeySecrets;
  return (secretName, key) => {
    if (prefix === undefined) {
      return {
        error:
          'deploy keys of tracks read at run time need tracksFrom[].deployKeySecrets (where their secrets are kept)',
      };
    }
    // Kubernetes' own rules for a Secret's name and keys: nothing here can climb out of the prefix.
    if (!SECRET_NAME.test(secretName) || !SECRET_KEY.test(key) || /^\.\.?$/.test(key)) {
      return {
        error: `secretName ${describeValue(secretName)} and key ${describeValue(key)} must be a Kubernetes Secret's name and key`,
      };
    }
    return prefix.startsWith('env:')
      ? `${prefix}${envName(`${namespace}_${secretName}`, key)}`
      : `${prefix}${namespace}/${secretName}/${key}`;
  };
}

function formatted(issues: readonly { path: (string | number)[]; message: string }[]): string[] {
  return issues.map((issue) =>
    issue.path.length === 0 ? issue.message : `${formatPath(issue.path)}: ${issue.message}`,
  );
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

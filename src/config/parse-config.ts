import { createHash } from 'node:crypto';
import { checkReferences, type ClusterNames, type TrackEntry } from './check-references.ts';
import { ConfigError } from './config-error.ts';
import { describeValue } from './describe-value.ts';
import { isDnsLabel } from './dns-label.ts';
import { gitHostRepository, providerOfHost } from './git-host.ts';
import { globMatches } from '../glob.ts';
import { gitTrackPathMapper, gitTrackSchema, mapGitTrack } from './git-track.ts';
import { omitUndefined } from './omit-undefined.ts';
import { formatPath, type LocatedIssue, type PathSegment } from './path.ts';
import { readYamlDocuments } from './read-yaml.ts';
import {
  COMMIT_STATUS_PROVIDERS,
  configSchema,
  trackSchema,
  type ParsedConfig,
  type ParsedTrack,
  tracksFromSchema,
  type ParsedTracksFrom,
} from './schema.ts';
import { splitDocuments } from './split-documents.ts';
import type { Cluster, Config, Track, TracksFrom } from './types.ts';
import { toLocatedIssues, type PathMapper } from './zod-issues.ts';

/** Name of the cluster a config without `clusters` gets: the ambient kubeconfig. */
export const IMPLICIT_CLUSTER = 'default';

const REPORT = { reportInput: true } as const;

/**
 * Parses and validates the text of a `driftless.yaml`.
 *
 * The first YAML document that is not a Faros GitTrack is the configuration;
 * every GitTrack document becomes a track, after those under `tracks:`. An
 * empty file is a valid configuration with no tracks. Every problem is
 * collected before failing, so one run shows them all.
 *
 * @param fileName the file as the user named it, used in messages only.
 * @throws {ConfigError} listing every problem, in file order.
 */
export function parseConfig(text: string, fileName: string): Config {
  const split = splitDocuments(readYamlDocuments(text, fileName));
  const issues: LocatedIssue[] = [...split.issues];

  // `tracks:` with every entry commented out is null: a section like that is absent.
  const top = Object.fromEntries(
    Object.entries(split.config?.value ?? {}).filter(([, value]) => value !== null),
  );
  const parsedTop = configSchema.safeParse(top, REPORT);
  if (!parsedTop.success) issues.push(...toLocatedIssues(parsedTop.error.issues, (p) => [...p]));
  const clusterNames = namesOfClusters(top['clusters'], issues);

  const entries: TrackEntry[] = [];
  const rawTracks: unknown[] = Array.isArray(top['tracks']) ? top['tracks'] : [];
  rawTracks.forEach((raw, index) => {
    const locate: PathMapper = (path) => ['tracks', index, ...path];
    entries.push(parseTrack(raw, `tracks[${index}]`, locate, issues));
  });
  for (const { index, value } of split.gitTracks) {
    const prefix = split.locate(index);
    const shape = gitTrackSchema.safeParse(value, REPORT);
    if (!shape.success)
      issues.push(...toLocatedIssues(shape.error.issues, (p) => [...prefix, ...p]));
    const { metadata, spec } = value;
    // Without both mappings there is nothing to map; the shape issues say why.
    if (!isMapping(metadata) || !isMapping(spec)) continue;
    const mapping = mapGitTrack({ metadata, spec });
    issues.push(...mapping.issues.map((i) => ({ ...i, path: [...prefix, ...i.path] })));
    const label = formatPath(['documents', index]);
    const entry = parseTrack(mapping.track, label, gitTrackPathMapper(prefix), issues);
    const valid = shape.success && mapping.issues.length === 0;
    entries.push(valid ? entry : { ...entry, parsed: undefined });
  }

  const references = checkReferences(entries, clusterNames);
  issues.push(...references.issues);
  const rawSources: unknown[] = Array.isArray(top['tracksFrom']) ? top['tracksFrom'] : [];
  const tracksFrom = tracksFromOf(rawSources, clusterNames, issues);
  if (parsedTop.success) {
    const parsedTracks = entries.flatMap((entry) =>
      entry.parsed === undefined ? [] : [entry.parsed],
    );
    issues.push(...commitStatusIssues(parsedTop.data.notifications, parsedTracks));
  }

  if (issues.length > 0 || !parsedTop.success) {
    throw new ConfigError(
      sortByLocation(issues).map((i) => ({
        file: fileName,
        path: formatPath(i.path),
        message: i.message,
      })),
    );
  }
  return {
    store: omitUndefined(parsedTop.data.store),
    clusters: clustersOf(parsedTop.data),
    webhooks: parsedTop.data.webhooks,
    tracks: entries.map((entry, index) =>
      toTrack(entry.parsed as ParsedTrack, references.clusterOf.get(index) ?? IMPLICIT_CLUSTER),
    ),
    tracksFrom,
    notifications: parsedTop.data.notifications.map((entry) => omitUndefined(entry)),
    ...(parsedTop.data.dashboard === undefined ? {} : { dashboard: parsedTop.data.dashboard }),
  };
}

type ParsedNotification = ParsedConfig['notifications'][number];

/**
 * Commit status receivers that cannot work: a token where the apply
 * function could read it, or a track of the config on a host whose kind
 * nobody said (tracks read at run time are told in the delivery's log).
 */
function commitStatusIssues(
  receivers: readonly ParsedNotification[],
  tracks: readonly Pick<ParsedTrack, 'name' | 'repository' | 'bucket'>[],
): LocatedIssue[] {
  return receivers.flatMap((receiver, index): LocatedIssue[] => {
    if (receiver.type !== 'commitStatus') return [];
    const out: LocatedIssue[] = [];
    const token = receiver.token;
    const name =
      token.scheme === 'aws-secretsmanager'
        ? token.id
        : token.scheme === 'aws-ssm'
          ? token.name
          : '';
    if (/(^|[:/])driftless\/notify\//.test(name)) {
      out.push({
        path: ['notifications', index, 'token'],
        message:
          'a Git token under driftless/notify/ is readable by the apply function; keep it under driftless/git/, which only fetch reads',
      });
    }
    if (receiver.provider === undefined) {
      for (const track of tracks) {
        if (track.bucket !== undefined || track.repository === undefined) continue;
        if (!receiver.tracks.some((pattern) => globMatches(pattern, track.name))) continue;
        const where = gitHostRepository(track.repository);
        if (where !== undefined && providerOfHost(where.host) === undefined) {
          out.push({
            path: ['notifications', index, 'provider'],
            message: `track "${track.name}" is on ${where.host}, which is not github.com, gitlab.com or bitbucket.org: say which host it is (${COMMIT_STATUS_PROVIDERS.join(', ')})`,
          });
          break;
        }
      }
    }
    return out;
  });
}

/**
 * The `tracksFrom` entries with their ids and clusters: a repository's tracks
 * go to its `cluster`, or to the only cluster there is.
 */
function tracksFromOf(
  entries: readonly unknown[],
  clusters: ClusterNames | undefined,
  issues: LocatedIssue[],
): TracksFrom[] {
  const ids = new Map<string, number>();
  return entries.flatMap((raw, index): TracksFrom[] => {
    const path = (...rest: PathSegment[]): PathSegment[] => ['tracksFrom', index, ...rest];
    const parsed = tracksFromSchema.safeParse(raw, REPORT);
    // The cluster is checked from what was written, so it is reported beside other mistakes.
    const written =
      isMapping(raw) && typeof raw['cluster'] === 'string' ? raw['cluster'] : undefined;
    if (!parsed.success) {
      issues.push(...toLocatedIssues(parsed.error.issues, (p) => path(...p)));
      if (written !== undefined && clusters !== undefined && !clusters.names.includes(written)) {
        issues.push({ path: path('cluster'), message: unknownCluster(written, clusters) });
      }
      return [];
    }
    const entry: ParsedTracksFrom = parsed.data;
    let cluster = entry.cluster;
    if (cluster === undefined) {
      if (clusters !== undefined && clusters.names.length === 1) cluster = clusters.names[0];
      else if (clusters !== undefined) {
        issues.push({
          path: path('cluster'),
          message: `is required when there are several clusters (${clusters.names.join(', ')})`,
        });
      }
    } else if (clusters !== undefined && !clusters.names.includes(cluster)) {
      issues.push({ path: path('cluster'), message: unknownCluster(cluster, clusters) });
      return [];
    }
    if (cluster === undefined) return [];
    const common = omitUndefined({
      cluster,
      allowLocalRepositories: entry.allowLocalRepositories,
      deployKeySecrets: entry.deployKeySecrets,
    });
    const source: TracksFrom =
      entry.repository === undefined
        ? { kind: 'cluster', id: `cluster-${cluster}`, ...common }
        : omitUndefined({
            kind: 'repository' as const,
            id: `repository-${shortHash(`${entry.repository}\n${entry.reference ?? 'main'}\n${entry.subPath ?? ''}`)}`,
            ...common,
            repository: entry.repository,
            reference: entry.reference ?? 'main',
            subPath: entry.subPath,
            auth: entry.auth && omitUndefined(entry.auth),
          });
    const first = ids.get(source.id);
    if (first !== undefined) {
      issues.push({
        path: path(),
        message: `reads the same source as tracksFrom[${first}]`,
      });
      return [];
    }
    ids.set(source.id, index);
    return [source];
  });
}

function unknownCluster(cluster: string, clusters: ClusterNames): string {
  return `${describeValue(cluster)} is not a defined cluster${clusters.implicit ? ' (none are defined; the implicit one is "default")' : ` (clusters: ${clusters.names.join(', ')})`}`;
}

/** 12 hex of the text's sha256: a name that stays the same as long as the text does. */
function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** Validates one track and records what the cross-track checks need from it, valid or not. */
function parseTrack(
  raw: unknown,
  label: string,
  locate: PathMapper,
  issues: LocatedIssue[],
): TrackEntry {
  const parsed = trackSchema.safeParse(raw, REPORT);
  if (!parsed.success) issues.push(...toLocatedIssues(parsed.error.issues, locate));
  const fields = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const name = fields['name'];
  const cluster = fields['cluster'];
  const dependsOn = Array.isArray(fields['dependsOn']) ? (fields['dependsOn'] as unknown[]) : [];
  // Values with errors of their own are left out so one mistake yields one message.
  const validName = (value: unknown): value is string =>
    typeof value === 'string' && isDnsLabel(value);
  return {
    name: typeof name === 'string' ? name : undefined,
    // A track that is not even a mapping has nothing to resolve a cluster for.
    cluster:
      fields !== raw
        ? null
        : cluster === undefined
          ? undefined
          : validName(cluster)
            ? cluster
            : null,
    dependsOn: dependsOn.map((d) => (validName(d) ? d : null)),
    parsed: parsed.success ? parsed.data : undefined,
    label,
    locate,
  };
}

/**
 * The cluster names tracks may refer to, taken from what was written so that
 * references are checked even when a cluster has an error; reports duplicates.
 * `undefined` when `clusters` is not even a list.
 */
function namesOfClusters(raw: unknown, issues: LocatedIssue[]): ClusterNames | undefined {
  if (raw === undefined || (Array.isArray(raw) && raw.length === 0)) {
    return { names: [IMPLICIT_CLUSTER], implicit: true };
  }
  if (!Array.isArray(raw)) return undefined;
  const names: string[] = [];
  raw.forEach((cluster: unknown, index) => {
    const name =
      typeof cluster === 'object' && cluster !== null
        ? (cluster as Record<string, unknown>)['name']
        : undefined;
    if (typeof name !== 'string') return;
    const first = names.indexOf(name);
    if (first >= 0) {
      issues.push({
        path: ['clusters', index, 'name'],
        message: `${describeValue(name)} is already used by clusters[${first}]`,
      });
    }
    names.push(name);
  });
  return { names: [...new Set(names)], implicit: false };
}

function clustersOf(config: ParsedConfig): Cluster[] {
  if (config.clusters.length === 0) {
    return [{ name: IMPLICIT_CLUSTER, credentials: { type: 'kubeconfig' } }];
  }
  return config.clusters.map((c) =>
    omitUndefined({ ...c, credentials: omitUndefined(c.credentials) }),
  );
}

/** A validated track with its cluster resolved and its defaults filled in. */
export function toTrack(parsed: ParsedTrack, cluster: string): Track {
  const { semver } = parsed;
  return omitUndefined({
    ...parsed,
    cluster,
    repository:
      parsed.repository ??
      `s3://${parsed.bucket?.name ?? ''}/${parsed.bucket?.prefix.replace(/^\/+/, '') ?? ''}`,
    bucket: parsed.bucket && omitUndefined(parsed.bucket),
    // `main` is the default only when no semver range picks the tag instead (and not for a bucket).
    reference:
      semver === undefined && parsed.bucket === undefined
        ? (parsed.reference ?? 'main')
        : undefined,
    ignore: parsed.ignore.map((rule) => ({ ...rule, target: omitUndefined(rule.target) })),
    healthChecks: parsed.healthChecks.map(omitUndefined),
    auth: parsed.auth && omitUndefined(parsed.auth),
    helm: parsed.helm && omitUndefined(parsed.helm),
  });
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Sections in the order DESIGN.md lists them, which is how config files are written. */
const SECTIONS = [
  'store',
  'clusters',
  'webhooks',
  'tracks',
  'tracksFrom',
  'notifications',
  'dashboard',
  'documents',
];

/**
 * Orders issues as the file reads: sections, then entries by index. Stable,
 * so the issues of one track keep the order of its fields.
 */
function sortByLocation(issues: readonly LocatedIssue[]): LocatedIssue[] {
  const rank = (path: readonly PathSegment[]): [number, number] => {
    const [section, index] = path;
    const order = typeof section === 'string' ? SECTIONS.indexOf(section) : -1;
    return [order < 0 ? SECTIONS.length : order, typeof index === 'number' ? index : -1];
  };
  return [...issues].sort((a, b) => {
    const [sa, ia] = rank(a.path);
    const [sb, ib] = rank(b.path);
    return sa - sb || ia - ib;
  });
}

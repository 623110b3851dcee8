import type { LocatedIssue, PathSegment } from './path.ts';
import type { ParsedTrack } from './schema.ts';

/**
 * A track as seen by the cross-track checks, valid or not: references are
 * taken from what was written, so a track with an unrelated error (a bad
 * interval) still has its names, cluster and dependsOn checked in the same run.
 */
export interface TrackEntry {
  /** The name as written, when it is a string, so invalid tracks still claim their name. */
  readonly name?: string;
  /** The cluster as written; `undefined` when omitted, `null` when it has errors of its own. */
  readonly cluster: string | undefined | null;
  /** The dependsOn entries as written; `null` for entries with errors of their own. */
  readonly dependsOn: readonly (string | null)[];
  /** The validated track; absent when the track has errors of its own. */
  readonly parsed?: ParsedTrack;
  /** Where the track is, for "already used by ..." (`tracks[1]`, `documents[2]`). */
  readonly label: string;
  /** Maps a track-field path to the path the user wrote. */
  readonly locate: (path: readonly PathSegment[]) => PathSegment[];
}

/** The clusters tracks may name. */
export interface ClusterNames {
  readonly names: readonly string[];
  /** True when the config defined none and `names` holds only the implicit default. */
  readonly implicit: boolean;
}

/**
 * Checks what no single track can: unique names, the cluster each track runs
 * on, dependsOn targets and dependency cycles.
 *
 * @param clusters the defined clusters, or `undefined` when they are invalid
 *   (cluster references are then not checked, to avoid piling on errors).
 * @returns the issues, and each valid track's resolved cluster by entry index.
 */
export function checkReferences(
  entries: readonly TrackEntry[],
  clusters: ClusterNames | undefined,
): { issues: LocatedIssue[]; clusterOf: Map<number, string> } {
  const issues: LocatedIssue[] = [];
  const clusterOf = new Map<number, string>();
  const firstByName = new Map<string, TrackEntry>();

  for (const entry of entries) {
    if (entry.name === undefined) continue;
    const first = firstByName.get(entry.name);
    if (first) {
      issues.push({
        path: entry.locate(['name']),
        message: `${JSON.stringify(entry.name)} is already used by ${first.label}`,
      });
    } else {
      firstByName.set(entry.name, entry);
    }
  }

  entries.forEach((entry, index) => {
    if (clusters && entry.cluster !== null) {
      const cluster = resolveCluster(entry.cluster, clusters);
      if ('error' in cluster) {
        issues.push({ path: entry.locate(['cluster']), message: cluster.error });
      } else {
        clusterOf.set(index, cluster.name);
      }
    }
    entry.dependsOn.forEach((dependency, position) => {
      if (dependency !== null && !firstByName.has(dependency)) {
        issues.push({
          path: entry.locate(['dependsOn', position]),
          message: `${JSON.stringify(dependency)} is not a track`,
        });
      }
    });
  });

  for (const cycle of findCycles(entries, firstByName)) {
    const owner = firstByName.get(cycle[0] ?? '');
    if (owner) {
      issues.push({
        path: owner.locate(['dependsOn']),
        message: `dependency cycle: ${cycle.join(' -> ')}`,
      });
    }
  }
  return { issues, clusterOf };
}

function resolveCluster(
  name: string | undefined,
  clusters: ClusterNames,
): { name: string } | { error: string } {
  if (name !== undefined) {
    if (clusters.names.includes(name)) return { name };
    return {
      error: clusters.implicit
        ? `${JSON.stringify(name)} is not a cluster; no clusters are defined (add it under clusters)`
        : `${JSON.stringify(name)} is not a cluster; defined: ${clusters.names.join(', ')}`,
    };
  }
  const [only, ...others] = clusters.names;
  if (only !== undefined && others.length === 0) return { name: only };
  return {
    error: `is required when several clusters are defined (${clusters.names.join(', ')})`,
  };
}

/**
 * Dependency cycles, each once, as `[a, b, a]`, starting from the member
 * written first in the file so the report is stable.
 */
function findCycles(
  entries: readonly TrackEntry[],
  firstByName: ReadonlyMap<string, TrackEntry>,
): string[][] {
  const order = new Map(entries.map((entry, index) => [entry.name ?? '', index]));
  const dependencies = (name: string): string[] =>
    (firstByName.get(name)?.dependsOn ?? []).filter((d): d is string => d !== null);
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const cycles: string[][] = [];

  const visit = (name: string): void => {
    state.set(name, 'visiting');
    stack.push(name);
    for (const next of dependencies(name)) {
      if (!firstByName.has(next)) continue;
      const nextState = state.get(next);
      if (nextState === 'visiting') {
        const members = stack.slice(stack.indexOf(next));
        const start = members.reduce(
          (best, m, i) => ((order.get(m) ?? 0) < (order.get(members[best] ?? '') ?? 0) ? i : best),
          0,
        );
        const rotated = [...members.slice(start), ...members.slice(0, start)];
        const key = rotated.join('\0');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push([...rotated, rotated[0] ?? '']);
        }
      } else if (nextState === undefined) {
        visit(next);
      }
    }
    stack.pop();
    state.set(name, 'done');
  };

  for (const name of firstByName.keys()) if (!state.has(name)) visit(name);
  return cycles;
}

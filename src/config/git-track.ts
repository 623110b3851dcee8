import * as z from 'zod/mini';
import { describeValue } from './describe-value.ts';
import type { PathSegment } from './path.ts';
import { strictObject } from './strict-object.ts';
import type { PathMapper } from './zod-issues.ts';

/** apiVersion of the Faros documents Driftless accepts as tracks. */
export const GIT_TRACK_API_VERSION = 'faros.pusher.com/v1alpha1';

/** Annotation a GitTrack uses to name its cluster, since Faros has no such field. */
export const CLUSTER_ANNOTATION = 'driftless.dev/cluster';

/** Annotation a GitTrack uses for its track's deletionPolicy (DESIGN.md; default MirrorPrune). */
export const DELETION_POLICY_ANNOTATION = 'driftless.dev/deletion-policy';

/** Whether a YAML document is a Faros GitTrack. */
export function isGitTrack(document: Readonly<Record<string, unknown>>): boolean {
  return document['apiVersion'] === GIT_TRACK_API_VERSION && document['kind'] === 'GitTrack';
}

/**
 * The GitTrack's own structure. Values are `unknown` because they are
 * validated once, as track fields, by the track schema; metadata is loose
 * because `kubectl get -o yaml` output carries uid, labels and the like.
 */
export const gitTrackSchema = strictObject({
  apiVersion: z.literal(GIT_TRACK_API_VERSION),
  kind: z.literal('GitTrack'),
  metadata: z.looseObject({
    name: z.optional(z.unknown()),
    namespace: z.optional(z.unknown()),
    annotations: z.optional(z.record(z.string(), z.unknown())),
  }),
  spec: strictObject({
    repository: z.optional(z.unknown()),
    reference: z.optional(z.unknown()),
    subPath: z.optional(z.unknown()),
    deployKey: z.optional(
      strictObject({
        secretName: z.optional(z.string()),
        key: z.optional(z.string()),
        type: z.optional(z.string()),
        secretNamespace: z.optional(z.string()),
      }),
    ),
  }),
  status: z.optional(z.unknown()),
});

/** The parts of a GitTrack that are mapped; loose, so mapping works beside structural errors. */
export interface GitTrackParts {
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly spec: Readonly<Record<string, unknown>>;
}

/** A GitTrack rewritten as a `tracks:` entry, plus what could not be mapped. */
export interface GitTrackMapping {
  /** Input for the track schema. */
  readonly track: Record<string, unknown>;
  /** Problems with the GitTrack itself, as paths inside the document. */
  readonly issues: { path: PathSegment[]; message: string }[];
}

/**
 * Maps a GitTrack onto a track (DESIGN.md): metadata.name/namespace and
 * spec.repository/reference/subPath carry over; an HTTPBasicAuth deploy key
 * becomes `auth: {type: basic, secret: env:<SECRETNAME>_<KEY>}` and an SSH one
 * (Faros' default type) `auth: {type: ssh, secret: env:<SECRETNAME>_<KEY>,
 * knownHosts: env:<SECRETNAME>_KNOWN_HOSTS}`, because the Kubernetes Secret it
 * names is out of reach of a serverless function.
 */
export function mapGitTrack(
  { metadata, spec }: GitTrackParts,
  secretOf: DeployKeySecret = envSecretOf,
): GitTrackMapping {
  const issues: { path: PathSegment[]; message: string }[] = [];
  const annotations = isMapping(metadata['annotations']) ? metadata['annotations'] : {};
  const track: Record<string, unknown> = {
    name: metadata['name'],
    namespace: metadata['namespace'],
    cluster: annotations[CLUSTER_ANNOTATION],
    deletionPolicy: annotations[DELETION_POLICY_ANNOTATION],
    repository: spec['repository'],
    reference: spec['reference'] === '' ? undefined : spec['reference'],
    subPath: spec['subPath'] === '' ? undefined : spec['subPath'],
  };
  const deployKey = isMapping(spec['deployKey']) ? spec['deployKey'] : {};
  const text = (key: string): string | undefined => {
    const value = deployKey[key];
    return typeof value === 'string' ? value : undefined;
  };
  const secretName = text('secretName') ?? '';
  const key = text('key') ?? '';
  const type = text('type') ?? '';
  // Go serialises an unset deployKey as empty strings; that means no credentials.
  if (secretName + key !== '') {
    const ssh = type === '' || type.toLowerCase() === 'ssh';
    if (!ssh && type.toLowerCase() !== 'httpbasicauth') {
      issues.push({
        path: ['spec', 'deployKey', 'type'],
        message: `${describeValue(type)} is not one of SSH, HTTPBasicAuth`,
      });
    } else if (secretName === '' || key === '') {
      issues.push({
        path: ['spec', 'deployKey', secretName === '' ? 'secretName' : 'key'],
        message: 'is required',
      });
    } else {
      const secret = secretOf(secretName, key);
      // Faros (an unset type is SSH there too) reads the host keys from the pod's
      // known_hosts; here they come with the key, from the same secret's KNOWN_HOSTS.
      const knownHosts = ssh ? secretOf(secretName, 'KNOWN_HOSTS') : undefined;
      const refused = [secret, knownHosts].find((ref) => typeof ref === 'object');
      if (typeof refused === 'object') {
        issues.push({ path: ['spec', 'deployKey'], message: refused.error });
      } else if (ssh) {
        track['auth'] = { type: 'ssh', secret, knownHosts };
      } else {
        track['auth'] = { type: 'basic', secret };
      }
    }
  }
  return { track, issues };
}

/** The secret reference a deploy key's secret and key map to, or why it may not be used. */
export type DeployKeySecret = (secretName: string, key: string) => string | { error: string };

/** In a config file: `env:<SECRETNAME>_<KEY>`, the environment of the process that fetches. */
export const envSecretOf: DeployKeySecret = (secretName, key) => `env:${envName(secretName, key)}`;

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `git-creds` + `password` -> `GIT_CREDS_PASSWORD`. */
export function envName(secretName: string, key: string): string {
  return `${secretName}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

const FIELD_PATHS: Readonly<Record<string, PathSegment[]>> = {
  name: ['metadata', 'name'],
  namespace: ['metadata', 'namespace'],
  cluster: ['metadata', 'annotations', CLUSTER_ANNOTATION],
  deletionPolicy: ['metadata', 'annotations', DELETION_POLICY_ANNOTATION],
  repository: ['spec', 'repository'],
  reference: ['spec', 'reference'],
  subPath: ['spec', 'subPath'],
  // The secret reference is generated, so its problems belong to the deploy key.
  auth: ['spec', 'deployKey'],
};

/** Maps a track-field path back to where the value sits in the GitTrack document. */
export function gitTrackPathMapper(prefix: readonly PathSegment[]): PathMapper {
  return (path) => {
    const [first, ...rest] = path;
    const mapped = typeof first === 'string' ? FIELD_PATHS[first] : undefined;
    if (mapped === undefined) return [...prefix, ...path];
    return first === 'auth' ? [...prefix, ...mapped] : [...prefix, ...mapped, ...rest];
  };
}

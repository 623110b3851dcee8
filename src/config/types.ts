import type { ResourceType } from './resource-type.ts';
import type { SecretRef } from './secret-ref.ts';
import type { DeletionPolicy } from './deletion-policy.ts';

/** Where artifacts and state are kept. */
export type StoreConfig =
  | { readonly type: 'fs'; readonly path: string }
  | {
      readonly type: 's3';
      readonly bucket: string;
      /** Key prefix; `''` when not set. */
      readonly prefix: string;
      /** S3-compatible server (MinIO, ...); AWS when unset. */
      readonly endpoint?: string;
      readonly region?: string;
    };

/** How the apply function reaches a cluster: exactly one source of credentials. */
export type ClusterCredentials =
  /** A kubeconfig file; `path` unset means the usual lookup ($KUBECONFIG, then ~/.kube/config). */
  | { readonly type: 'kubeconfig'; readonly path?: string }
  | { readonly type: 'kubeconfigSecret'; readonly secret: SecretRef }
  | {
      readonly type: 'eks';
      readonly name: string;
      readonly region: string;
      readonly roleArn?: string;
    };

/** A cluster tracks are applied to. */
export interface Cluster {
  readonly name: string;
  readonly credentials: ClusterCredentials;
  /** Kubeconfig context; the kubeconfig's current context when unset. */
  readonly context?: string;
}

/** Git hosts whose push webhooks Driftless verifies: the one list config, serve and Lambda use. */
export const WEBHOOK_HOSTS = ['github', 'gitlab', 'gitea', 'bitbucket', 'generic'] as const;

export type WebhookHost = (typeof WEBHOOK_HOSTS)[number];

/** Whether `name` (a URL path segment, say) is one of {@link WEBHOOK_HOSTS}. */
export function isWebhookHost(name: string): name is WebhookHost {
  return (WEBHOOK_HOSTS as readonly string[]).includes(name);
}

/** Signing secrets of one webhook host; several while a secret is being rotated. */
export interface WebhookConfig {
  readonly secrets: SecretRef[];
}

/** Credentials the fetch function uses for a track's repository. */

/** Delete, Orphan or MirrorPrune (Flux's deletionPolicy). */
export type { DeletionPolicy } from './deletion-policy.ts';

export type GitAuth =
  /** `secret` holds `user:password`. */
  | { readonly type: 'basic'; readonly secret: SecretRef }
  | { readonly type: 'token'; readonly secret: SecretRef }
  /**
   * SSH repositories: `secret` holds the private key (OpenSSH or PEM; ed25519,
   * ECDSA or RSA), `knownHosts` known_hosts lines (plain or hashed) for the
   * host, `passphrase` the key's passphrase if it has one.
   */
  | {
      readonly type: 'ssh';
      readonly secret: SecretRef;
      readonly knownHosts: SecretRef;
      readonly passphrase?: SecretRef;
    }
  /** Bucket tracks: `secret` holds JSON `{"accessKeyId", "secretAccessKey"}`. */
  | { readonly type: 's3'; readonly secret: SecretRef }
  | {
      readonly type: 'githubApp';
      readonly appId: string;
      readonly installationId: string;
      readonly privateKey: SecretRef;
      /** GitHub Enterprise Server's API, e.g. `https://github.example.com/api/v3`; default api.github.com. */
      readonly apiUrl?: string;
    };

/** Which objects a drift ignore rule applies to; every field optional, all given must match. */
export interface IgnoreTarget {
  readonly group?: string;
  readonly version?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly labelSelector?: string;
}

/** Fields (JSON pointers) whose differences are not drift, on the matching objects. */
export interface IgnoreRule {
  readonly paths: string[];
  readonly target: IgnoreTarget;
}

/** A Helm chart a track renders (`helm:`) instead of plain manifests or a kustomization. */
export interface HelmSource {
  /** A path relative to the track's subPath, or a chart name in `repository`. */
  readonly chart: string;
  /** `http(s)://` chart repository or `oci://` registry; unset for a chart in the revision. */
  readonly repository?: string;
  /** Chart version or semver range (repository charts only); unset = newest. */
  readonly version?: string;
  /** Release name; the track's name when unset. */
  readonly releaseName?: string;
  readonly values: Record<string, unknown>;
  /** Paths relative to the track's subPath, merged in order, before `values`. */
  readonly valuesFiles: string[];
}

/** A Bucket source (Flux's Bucket): an S3 or S3-compatible bucket's objects under a prefix. */
export interface BucketSource {
  readonly name: string;
  /** `''` for the whole bucket; otherwise object keys start with it. */
  readonly prefix: string;
  /** An S3-compatible server (MinIO...); default AWS. */
  readonly endpoint?: string;
  readonly region?: string;
}

/** Where `substituteFrom:` variables come from: KEY=VALUE lines or a JSON object, read in the apply step. */
export interface SubstituteSource {
  readonly secret: SecretRef;
  /** A secret that cannot be read is skipped instead of failing the sync. */
  readonly optional: boolean;
}

/** How SOPS-encrypted files of a track are decrypted (`decryption:`), in the apply step only. */
export interface Decryption {
  readonly provider: 'sops';
  /** Secret refs holding age identities (`AGE-SECRET-KEY-1...` lines). */
  readonly keys: SecretRef[];
  /** KMS key ARNs SOPS files may be encrypted with; the apply function may decrypt with these only. */
  readonly kmsKeys: string[];
}

/** An object whose health decides whether a sync succeeded. */
/** Flux's `healthCheckExprs`: CEL over `self` for objects of one apiVersion and kind. */
export interface HealthCheckExpr {
  readonly apiVersion: string;
  readonly kind: string;
  readonly current: string;
  readonly inProgress?: string;
  readonly failed?: string;
}

export interface HealthCheck {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/**
 * A validated, defaulted track: one repository path applied to one cluster.
 *
 * Exactly one of `reference` and `semver` is set.
 */
export interface Track {
  /** DNS-1123 label, unique; it becomes the `driftless.dev/track` label value. */
  readonly name: string;
  /** Name of the cluster, always resolved (also when the config left it implicit). */
  readonly cluster: string;
  /**
   * https/http URL, file:// URL or local path, as written; for a bucket track
   * `s3://<bucket>/<prefix>` (for people and metrics: it is never fetched as Git).
   */
  readonly repository: string;
  /** Set for a bucket track, instead of a Git repository. */
  readonly bucket?: BucketSource;
  /** Branch, tag, full commit sha or `refs/...`; `main` when neither it nor `semver` is given. */
  readonly reference?: string;
  /** node-semver range; the newest matching tag is deployed. */
  readonly semver?: string;
  /** Relative path inside the repository, normalised (no `./`, no trailing `/`); unset for the root. */
  readonly subPath?: string;
  readonly namespace?: string;
  readonly restrictNamespace: boolean;
  readonly ignoreResources: ResourceType[];
  readonly prune: boolean;
  /**
   * Take over existing objects without a `driftless.dev/track` label; by
   * default such an object is an ownership conflict and is left alone.
   */
  readonly adopt: boolean;
  /**
   * Apply, prune, health and drift correction act as
   * `system:serviceaccount:<targetNamespace or namespace>:<name>`.
   */
  readonly serviceAccountName?: string;
  /** Every namespaced object is applied in this namespace, whatever it names. */
  readonly targetNamespace?: string;
  /** After a failed sync, the next poll comes this soon (ms) instead of after `interval`. */
  readonly retryInterval?: number;
  /** An apply refused for an immutable field deletes and recreates the object. */
  readonly force: boolean;
  /**
   * Field managers whose changes count as made by hand, besides kubectl's
   * (drift/hand-edits.ts): fields only they own on the track's objects are undone.
   */
  readonly handEditManagers?: string[];
  /** What `driftless delete` does with the track's objects (Flux's deletionPolicy). */
  readonly deletionPolicy: DeletionPolicy;
  readonly allowEmpty: boolean;
  /** Drift check and ref poll interval, in milliseconds. */
  readonly interval: number;
  readonly drift: 'correct' | 'detect';
  readonly ignore: IgnoreRule[];
  readonly dependsOn: string[];
  readonly wait: boolean;
  readonly healthChecks: HealthCheck[];
  /** CEL health checks by kind (Flux semantics); used wherever health is judged. */
  readonly healthCheckExprs?: HealthCheckExpr[];
  /** Sync timeout, in milliseconds. */
  readonly timeout: number;
  readonly suspend: boolean;
  readonly auth?: GitAuth;
  /** `auto`: kustomize when a kustomization is at subPath; `true`: required; `false`: never. */
  readonly kustomize: 'auto' | boolean;
  /** Lets kustomize fetch remote bases (Git, HTTPS); refused by default. */
  readonly kustomizeRemoteResources: boolean;
  readonly helm?: HelmSource;
  /** gitignore patterns (relative to the repository root) left out before rendering. */
  readonly sourceIgnore?: string[];
  /** `${VAR}` values substituted after rendering (Flux postBuild semantics). */
  readonly substitute: Record<string, string>;
  /** Secrets holding more variables; read only in the apply step, never stored. */
  readonly substituteFrom: SubstituteSource[];
  readonly decryption?: Decryption;
  /** The resolved commit must be signed (OpenPGP or SSH) by one of these keys' holders. */
  readonly verify?: { readonly keys: SecretRef[] };
  /** Two-way sync: which side drives which objects; first match wins, none means Git. */
  readonly rules: SyncRule[];
  /** Where and as whom `syncTo: git` changes are committed. */
  readonly writeBack?: WriteBack;
  /** Set for a track read at run time (`tracksFrom`), not written in the config. */
  readonly origin?: TrackOrigin;
}

/** Which side drives an object (gitops-controller): Git, the cluster, or neither. */
export type SyncTo = 'git' | 'kubernetes' | 'ignore';

/** One `rules` entry: every field given must match; an absent one matches anything. */
export interface SyncRule {
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly namespaces?: string[];
  readonly labels?: Record<string, string>;
  readonly names?: string[];
  readonly syncTo: SyncTo;
}

/** `writeBack`: the branch, author and path of `syncTo: git` commits. */
export interface WriteBack {
  /** Unset: the track's reference. */
  readonly branch?: string;
  readonly author: { readonly name: string; readonly email: string };
  /** `{namespace}`, `{kind}`, `{name}` placeholders. */
  readonly path: string;
  readonly include: boolean;
}

/**
 * Where a track read at run time came from (`tracksFrom`): the source's id
 * and the GitTrack it was mapped from, so status can be written back to it.
 */
export interface TrackOrigin {
  /** {@link TracksFrom.id} of the source. */
  readonly source: string;
  /** The GitTrack read from the source's cluster (cluster sources only). */
  readonly gitTrack?: { readonly namespace: string; readonly name: string };
  /** The file holding the GitTrack document (repository sources only). */
  readonly file?: string;
}

/** What both kinds of `tracksFrom` entry share. */
interface TracksFromCommon {
  /**
   * Stable name of the source in the store: `cluster-<cluster>` or
   * `repository-<12 hex of the repository, reference and subPath>`.
   */
  readonly id: string;
  /** Every track of the source goes to this cluster and no other. */
  readonly cluster: string;
  /** Tracks whose repository is a local path or file:// URL are refused unless true. */
  readonly allowLocalRepositories: boolean;
  /** Prefix of the secret references deploy keys map to; unset: deploy keys are refused. */
  readonly deployKeySecrets?: string;
}

/** Faros GitTracks read from a cluster by the apply step. */
export interface GitTracksFromCluster extends TracksFromCommon {
  readonly kind: 'cluster';
}

/** GitTrack documents kept in a Git repository, read by the fetch step. */
export interface TracksFromRepository extends TracksFromCommon {
  readonly kind: 'repository';
  readonly repository: string;
  readonly reference: string;
  readonly subPath?: string;
  readonly auth?: GitAuth;
}

/** One `tracksFrom` entry: tracks defined outside the deployed config, read at run time. */
export type TracksFrom = GitTracksFromCluster | TracksFromRepository;

/** What every `notifications` entry has: its name and what it is sent. */
interface ReceiverCommon {
  readonly name: string;
  /** Track name globs. */
  readonly tracks: string[];
  /** Unset: every event. */
  readonly events?: NotificationEventType[];
}

/** Slack or Microsoft Teams incoming webhook, in its own message format. */
export interface ChatReceiver extends ReceiverCommon {
  readonly type: 'slack' | 'msteams';
  readonly url: SecretRef;
}

/** The event as JSON, signed with an HMAC when `secret` is set. */
export interface WebhookReceiver extends ReceiverCommon {
  readonly type: 'webhook';
  readonly url: SecretRef;
  readonly secret?: SecretRef;
}

export type CommitStatusProvider = 'github' | 'gitlab' | 'gitea' | 'bitbucket';

/** Commit statuses `driftless/<track>` on the track's Git host. */
export interface CommitStatusReceiver extends ReceiverCommon {
  readonly type: 'commitStatus';
  /** Unset: read from the repository URL's host. */
  readonly provider?: CommitStatusProvider;
  readonly token: SecretRef;
  readonly apiUrl?: string;
}

/** An AWS SNS topic (in AWS, or wherever AWS credentials are). */
export interface SnsReceiver extends ReceiverCommon {
  readonly type: 'sns';
  readonly topicArn: string;
}

/** An AWS EventBridge bus: `default`, a name or an ARN. */
export interface EventBridgeReceiver extends ReceiverCommon {
  readonly type: 'eventbridge';
  readonly eventBus: string;
}

/** One `notifications` entry: where events go, for which tracks and events. */
export type Notification =
  ChatReceiver | WebhookReceiver | CommitStatusReceiver | SnsReceiver | EventBridgeReceiver;

/** What happened to a track, as notifications name it. */
export type NotificationEventType =
  | 'fetched'
  | 'applied'
  | 'failed'
  | 'degraded'
  | 'healthy'
  | 'drifted'
  | 'corrected'
  | 'rolledBack'
  | 'writtenBack'
  | 'suspended';

/** A validated, defaulted `driftless.yaml`. */
export interface Config {
  readonly store: StoreConfig;
  /** At least one: a config without clusters gets the implicit `default` kubeconfig cluster. */
  readonly clusters: Cluster[];
  readonly webhooks: Partial<Record<WebhookHost, WebhookConfig>>;
  /** Tracks of the config, then those of GitTrack documents, in file order. */
  readonly tracks: Track[];
  /** Sources of more tracks, read at run time (sync/published-tracks.ts). */
  readonly tracksFrom: TracksFrom[];
  /** Where events are sent (notify/). */
  readonly notifications: Notification[];
  /** The dashboard: its address, and who may read it and act in it. */
  readonly dashboard?: DashboardConfig;
}

/** `dashboard:` (docs/configuration.md). */
export interface DashboardConfig {
  /** Where people open it; commit statuses link to its track pages. */
  readonly url?: string;
  /** `open`: anyone who reaches it reads; `authenticated`: reading needs a user or token too. */
  readonly readAccess: 'open' | 'authenticated';
  /** Basic-auth users of `driftless serve`'s dashboard. */
  readonly users: readonly { readonly name: string; readonly password: SecretRef }[];
  /** Bearer tokens of `driftless serve`'s dashboard. */
  readonly tokens: readonly SecretRef[];
  /** How API Gateway authenticates the dashboard function in AWS. */
  readonly authorizer:
    | { readonly type: 'iam' }
    | { readonly type: 'jwt'; readonly issuer: string; readonly audience: readonly string[] };
}

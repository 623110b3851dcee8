/**
 * The config module: `driftless.yaml` and Faros GitTrack documents in,
 * validated and defaulted {@link Config} out. Secret references are parsed
 * here but resolved only by the function that may hold them.
 */
export { ConfigError, formatConfigIssue, type ConfigIssue } from './config-error.ts';
export { MissingEnvError, readEnv, readOptionalEnv, type Environment } from './env.ts';
export { parseDuration } from './duration.ts';
export { CLUSTER_ANNOTATION, GIT_TRACK_API_VERSION } from './git-track.ts';
export { loadConfig } from './load-config.ts';
export { IMPLICIT_CLUSTER, parseConfig } from './parse-config.ts';
export { formatResourceType, parseResourceType, type ResourceType } from './resource-type.ts';
export { formatSecretRef, parseSecretRef, type SecretRef } from './secret-ref.ts';
export { isSemverRange } from './semver-range.ts';
export type {
  Cluster,
  ClusterCredentials,
  Config,
  GitAuth,
  HealthCheck,
  IgnoreRule,
  IgnoreTarget,
  StoreConfig,
  Track,
  WebhookConfig,
  WebhookHost,
} from './types.ts';

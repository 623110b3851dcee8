/**
 * zod schemas of `driftless.yaml` (DESIGN.md, "Config: driftless.yaml").
 *
 * Every object is strict: a misspelt field is an error, never silently
 * ignored. Checks that involve several tracks (unique names, cluster and
 * dependsOn references, cycles) live in `check-references.ts`, because tracks
 * are parsed one at a time so that one bad track does not hide the others.
 */
import { DELETION_POLICIES } from './deletion-policy.ts';
import * as z from 'zod/mini';
import { describeValue } from './describe-value.ts';
import { DNS_LABEL_RULE, isDnsLabel } from './dns-label.ts';
import { parseDuration } from './duration.ts';
import { parseLabelSelector } from './label-selector.ts';
import { classifyRepository } from './repository-location.ts';
import { parseResourceType } from './resource-type.ts';
import { isSemverRange } from './semver-range.ts';
import { parseSecretRef } from './secret-ref.ts';
import { strictObject } from './strict-object.ts';
import {
  WEBHOOK_HOSTS,
  type ClusterCredentials,
  type WebhookConfig,
  type WebhookHost,
} from './types.ts';

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * A field validated by a plain function, so every message is written here
 * with the offending value quoted rather than zod's generic wording.
 */
function field<T>(parse: (value: unknown) => Parsed<T>) {
  return z.pipe(
    z.unknown(),
    z.transform((value, ctx): T => {
      if (value === undefined) {
        ctx.issues.push({ code: 'custom', message: 'is required', input: value });
        return z.NEVER;
      }
      const result = parse(value);
      if (result.ok) return result.value;
      ctx.issues.push({ code: 'custom', message: result.error, input: value });
      return z.NEVER;
    }),
  );
}

/** A string field whose value must pass `test`; `explain` gets the quoted value. */
function stringMatching(test: (text: string) => boolean, explain: (quoted: string) => string) {
  return field((value) => {
    if (typeof value !== 'string') return notAString(value);
    if (value === '') return { ok: false, error: 'must not be empty' };
    return test(value) ? { ok: true, value } : { ok: false, error: explain(JSON.stringify(value)) };
  });
}

function notAString(value: unknown): { ok: false; error: string } {
  // YAML turns `1.10` into the number 1.1 and `yes`-like words stay strings in
  // YAML 1.2, so quoting is the fix worth suggesting for scalars.
  const hint = typeof value === 'number' || typeof value === 'boolean' ? ' (put it in quotes)' : '';
  return { ok: false, error: `${describeValue(value)} is not a string${hint}` };
}

/** DNS-1123 label: track names become label values, cluster names and namespaces follow suit. */
const dnsLabel = stringMatching(
  isDnsLabel,
  (quoted) => `${quoted} is not a valid name: ${DNS_LABEL_RULE}`,
);

/** A Kubernetes object name (DNS-1123 subdomain), as service accounts are named. */
const dnsSubdomainName = stringMatching(
  (text) =>
    text.length <= 253 &&
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(text),
  (quoted) =>
    `${quoted} is not a valid name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
);

const nonEmptyString = stringMatching(
  () => true,
  () => '',
);

const secretRef = field((value) => {
  if (typeof value !== 'string') return notAString(value);
  const ref = parseSecretRef(value);
  return 'error' in ref ? { ok: false, error: ref.error } : { ok: true, value: ref };
});

function duration(minimumMs: number, minimumText: string) {
  return field((value) => {
    const ms = typeof value === 'string' ? parseDuration(value) : undefined;
    if (ms === undefined) {
      return {
        ok: false,
        error: `${describeValue(value)} is not a duration (use e.g. 30s, 5m, 1h30m)`,
      };
    }
    if (ms < minimumMs) {
      return { ok: false, error: `${describeValue(value)} is shorter than ${minimumText}` };
    }
    return { ok: true, value: ms };
  });
}

/** Git ref names as `git check-ref-format` refuses them, loosely: enough to catch typos. */
const BAD_REFERENCE = /\s|\.\.|[~^:?*[\\]|^-|@\{|\/$|\.lock$|^\/|\/\//;
const reference = stringMatching(
  (t) => !BAD_REFERENCE.test(t),
  (quoted) => `${quoted} is not a valid Git reference`,
);

const semver = stringMatching(isSemverRange, (quoted) => `${quoted} is not a semver range`);

const repository = field((value) => {
  if (typeof value !== 'string') return notAString(value);
  const kind = classifyRepository(value);
  return 'error' in kind ? { ok: false, error: kind.error } : { ok: true, value };
});

/** A path inside the repository; normalised so `./deploy/` and `deploy` are the same track source. */
const subPath = field((value): Parsed<string | undefined> => {
  if (typeof value !== 'string') return notAString(value);
  const quoted = JSON.stringify(value);
  if (value.startsWith('/') || /^[A-Za-z]:/.test(value) || value.includes('\\')) {
    return { ok: false, error: `${quoted} must be a relative path with "/" separators` };
  }
  const segments = value.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) {
    return { ok: false, error: `${quoted} must not contain ".." (it would leave the repository)` };
  }
  return { ok: true, value: segments.length === 0 ? undefined : segments.join('/') };
});

const resourceType = field((value) => {
  if (typeof value !== 'string') return notAString(value);
  const parsed = parseResourceType(value);
  return parsed
    ? { ok: true, value: parsed }
    : {
        ok: false,
        error: `${JSON.stringify(value)} is not <resource>.<group>/<version> (e.g. jobs.batch/v1, or configmaps/v1 for the core group)`,
      };
});

const JSON_POINTER = /^(\/([^~/]|~[01])*)+$/;
const jsonPointer = stringMatching(
  (t) => JSON_POINTER.test(t),
  (quoted) => `${quoted} is not a JSON pointer (e.g. /spec/replicas)`,
);

const API_VERSION =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9a-z]+$/;
const apiVersion = stringMatching(
  (t) => API_VERSION.test(t),
  (quoted) => `${quoted} is not an apiVersion (e.g. v1, apps/v1)`,
);

const numericId = field((value) => {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) {
    return { ok: true, value: String(value) };
  }
  if (typeof value === 'string' && /^[1-9][0-9]*$/.test(value)) return { ok: true, value };
  return { ok: false, error: `${describeValue(value)} is not a numeric id` };
});

const httpUrl = stringMatching(
  (t) => {
    try {
      const url = new URL(t);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  },
  (quoted) => `${quoted} is not an http(s) URL`,
);

/** API Gateway's JWT authorizer fetches the issuer's OIDC discovery over HTTPS only. */
const httpsUrl = stringMatching(
  (t) => {
    try {
      return new URL(t).protocol === 'https:';
    } catch {
      return false;
    }
  },
  (quoted) => `${quoted} is not an https URL (API Gateway reads the issuer over HTTPS)`,
);

/**
 * Runs an object-level check even when fields already failed, so all problems surface at once.
 * Such a check sees fields as written, of any type: it must not assume the schema's types.
 */
const ALWAYS = {
  when: (payload: { value: unknown }) =>
    typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value),
};

/** The mapping entries of a list field as written (any type when the field itself failed), with their indexes. */
function mappingsOf<T>(list: unknown): [T, number][] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item: unknown, index) =>
    typeof item === 'object' && item !== null && !Array.isArray(item) ? [[item as T, index]] : [],
  );
}

/** Adds an issue when more than one, or (if `required`) none, of `keys` is present. */
function exclusive(
  value: Record<string, unknown>,
  keys: readonly string[],
  required: boolean,
  ctx: z.core.$RefinementCtx,
): void {
  const present = keys.filter((k) => value[k] !== undefined);
  const list = keys.join(', ');
  if (present.length > 1) {
    ctx.addIssue({
      code: 'custom',
      path: [present[1] ?? ''],
      message: `${present.join(' and ')} cannot be used together; use one of ${list}`,
    });
  } else if (required && present.length === 0) {
    ctx.addIssue({ code: 'custom', path: [], message: `needs one of ${list}` });
  }
}

const storeSchema = z.discriminatedUnion('type', [
  strictObject({ type: z.literal('fs'), path: z._default(nonEmptyString, '.driftless/store') }),
  strictObject({
    type: z.literal('s3'),
    bucket: nonEmptyString,
    prefix: z._default(z.string(), ''),
    endpoint: z.optional(httpUrl),
    region: z.optional(nonEmptyString),
  }),
]);

const clusterSchema = z.pipe(
  strictObject({
    name: dnsLabel,
    kubeconfig: z.optional(nonEmptyString),
    kubeconfigSecret: z.optional(secretRef),
    eks: z.optional(
      strictObject({
        name: nonEmptyString,
        region: nonEmptyString,
        roleArn: z.optional(nonEmptyString),
      }),
    ),
    context: z.optional(nonEmptyString),
  }).check(
    z.superRefine((value, ctx) => {
      exclusive(value, ['kubeconfig', 'kubeconfigSecret', 'eks'], true, ctx);
      if (value.eks !== undefined && value.context !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['context'],
          message: 'applies only to kubeconfig or kubeconfigSecret, not eks',
        });
      }
    }, ALWAYS),
  ),
  z.transform((value) => {
    const credentials: ClusterCredentials = value.eks
      ? { type: 'eks', ...value.eks }
      : value.kubeconfigSecret
        ? { type: 'kubeconfigSecret', secret: value.kubeconfigSecret }
        : { type: 'kubeconfig', path: value.kubeconfig };
    return { name: value.name, credentials, context: value.context };
  }),
);

const webhookSchema = z.pipe(
  strictObject({
    secret: z.optional(secretRef),
    secrets: z.optional(z.array(secretRef).check(z.minLength(1))),
  }).check(
    z.superRefine((value, ctx) => exclusive(value, ['secret', 'secrets'], true, ctx), ALWAYS),
  ),
  z.transform((value): WebhookConfig => ({
    secrets: value.secrets ?? (value.secret ? [value.secret] : []),
  })),
);

const webhooksSchema = strictObject(
  Object.fromEntries(WEBHOOK_HOSTS.map((host) => [host, z.optional(webhookSchema)])) as Record<
    WebhookHost,
    z.ZodMiniOptional<typeof webhookSchema>
  >,
);

const authSchema = z.discriminatedUnion('type', [
  strictObject({ type: z.literal('basic'), secret: secretRef }),
  strictObject({ type: z.literal('token'), secret: secretRef }),
  strictObject({ type: z.literal('s3'), secret: secretRef }),
  strictObject({
    type: z.literal('ssh'),
    secret: secretRef,
    knownHosts: secretRef,
    passphrase: z.optional(secretRef),
  }),
  strictObject({
    type: z.literal('githubApp'),
    appId: numericId,
    installationId: numericId,
    privateKey: secretRef,
    apiUrl: z.optional(httpUrl),
  }),
]);

const labelSelector = field((value) => {
  if (typeof value !== 'string') return notAString(value);
  if (value === '') return { ok: false, error: 'must not be empty' };
  try {
    parseLabelSelector(value);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
});

const ignoreRuleSchema = strictObject({
  paths: z.array(jsonPointer).check(z.minLength(1)),
  target: z._default(
    strictObject({
      group: z.optional(z.string()),
      version: z.optional(nonEmptyString),
      kind: z.optional(nonEmptyString),
      name: z.optional(nonEmptyString),
      namespace: z.optional(nonEmptyString),
      labelSelector: z.optional(labelSelector),
    }),
    {},
  ),
});

const healthCheckSchema = strictObject({
  apiVersion,
  kind: nonEmptyString,
  name: nonEmptyString,
  namespace: z.optional(dnsLabel),
});

/**
 * A CEL expression. Its syntax and type (bool) are checked where health is
 * judged (apply's checkHealthExprs): the CEL parser stays out of the
 * functions that never evaluate it.
 */
const celExpression = nonEmptyString;

const healthCheckExprSchema = strictObject({
  apiVersion,
  kind: nonEmptyString,
  current: celExpression,
  inProgress: z.optional(celExpression),
  failed: z.optional(celExpression),
});

/**
 * One entry per apiVersion and kind: a second one would never be used (the
 * first decides), so it is refused rather than silently ignored. Checked even
 * when other entries have errors, so all problems surface at once.
 */
const healthCheckExprsSchema = z.array(healthCheckExprSchema).check(
  z.superRefine(
    (value, ctx) => {
      const first = new Map<string, number>();
      mappingsOf<{ apiVersion?: unknown; kind?: unknown }>(value).forEach(([rule, index]) => {
        const { apiVersion: version, kind } = rule;
        if (typeof version !== 'string' || typeof kind !== 'string') return;
        const key = `${version} ${kind}`;
        const earlier = first.get(key);
        if (earlier === undefined) {
          first.set(key, index);
          return;
        }
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: `${version} ${kind} is already checked by healthCheckExprs[${earlier}] (one entry per apiVersion and kind)`,
          input: rule,
        });
      });
    },
    { when: (payload) => Array.isArray(payload.value) },
  ),
);

/** A path inside the revision, relative to the track's subPath; it may not climb out of the repository. */
const revisionPath = field((value): Parsed<string> => {
  if (typeof value !== 'string') return notAString(value);
  const quoted = JSON.stringify(value);
  if (value === '') return { ok: false, error: 'must not be empty' };
  if (value.startsWith('/') || /^[A-Za-z]:/.test(value) || value.includes('\\')) {
    return { ok: false, error: `${quoted} must be a relative path with "/" separators` };
  }
  return { ok: true, value };
});

const chartRepository = stringMatching(
  (t) => {
    try {
      return ['http:', 'https:', 'oci:'].includes(new URL(t).protocol);
    } catch {
      return false;
    }
  },
  (quoted) => `${quoted} is not an http(s):// chart repository or an oci:// registry`,
);

const chartVersion = stringMatching(
  (t) => isSemverRange(t),
  (quoted) => `${quoted} is not a chart version or semver range`,
);

/** One gitignore pattern (`.sourceignore` syntax). */
const ignorePattern = field((value): Parsed<string> => {
  if (typeof value !== 'string') return notAString(value);
  if (value.trim() === '') return { ok: false, error: 'must not be empty' };
  if (/[\r\n]/.test(value)) return { ok: false, error: 'must be one pattern, without line breaks' };
  if (value.startsWith('#')) {
    return {
      ok: false,
      error: `${JSON.stringify(value)} is a comment, not a pattern (escape it as \\#)`,
    };
  }
  return { ok: true, value };
});

const helmSchema = strictObject({
  chart: nonEmptyString,
  repository: z.optional(chartRepository),
  version: z.optional(chartVersion),
  releaseName: z.optional(dnsLabel),
  values: z._default(z.record(z.string(), z.unknown()), {}),
  valuesFiles: z._default(z.array(revisionPath), []),
}).check(
  z.superRefine((value, ctx) => {
    if (value.version !== undefined && value.repository === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['version'],
        message:
          'applies to charts from a repository; a chart in the revision has the version Git gives it',
      });
    }
    if (value.repository === undefined && typeof value.chart === 'string') {
      const segments = value.chart.split('/');
      if (value.chart.startsWith('/') || segments.includes('..')) {
        ctx.addIssue({
          code: 'custom',
          path: ['chart'],
          message: `${JSON.stringify(value.chart)} must be a path inside the revision (relative to subPath, no "..")`,
        });
      }
    }
  }, ALWAYS),
);

/** A `${VAR}` name, as Flux's post-build substitution accepts them. */
const variableName = stringMatching(
  (t) => /^[_a-zA-Z][_a-zA-Z0-9]*$/.test(t),
  (quoted) => `${quoted} is not a variable name (letters, digits and _, not starting with a digit)`,
);

/**
 * `substitute:` values are strings, empty allowed. A number is refused rather
 * than converted: YAML has already turned `1.10` into 1.1 by then.
 */
const substituteValue = field((value): Parsed<string> =>
  typeof value === 'string' ? { ok: true, value } : notAString(value),
);
const substituteValues = z.record(variableName, substituteValue);

const substituteFromSchema = strictObject({
  secret: secretRef,
  optional: z._default(z.boolean(), false),
});

/** An AWS KMS key ARN: IAM grants the apply function kms:Decrypt on exactly these. */
const kmsKeyArn = stringMatching(
  (t) => /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[A-Za-z0-9/_-]+$/.test(t),
  (quoted) => `${quoted} is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)`,
);

const decryptionSchema = strictObject({
  provider: z.literal('sops'),
  keys: z._default(z.array(secretRef), []),
  kmsKeys: z._default(z.array(kmsKeyArn), []),
});

/** Flux's Bucket source: the objects under `prefix` are the revision's files. */
const bucketSchema = strictObject({
  name: nonEmptyString,
  prefix: z._default(z.string(), ''),
  endpoint: z.optional(httpUrl),
  region: z.optional(nonEmptyString),
});

/** A label value or name pattern of a rule: non-empty text. */
const patternList = z.array(nonEmptyString).check(z.minLength(1));

/**
 * One two-way sync rule (gitops-controller): which objects it matches —
 * every field given must match, an absent field matches anything — and
 * which side drives them.
 */
const syncRuleSchema = strictObject({
  /** API groups (`""` for the core group); `*` matches any. */
  apiGroups: z.optional(z.array(z.string()).check(z.minLength(1))),
  /** Plural resource names, as kubectl and RBAC name them (`configmaps`). */
  resources: z.optional(patternList),
  /** Namespace globs; a cluster-scoped object matches no namespaces list. */
  namespaces: z.optional(patternList),
  /** Labels the object must carry with these values. */
  labels: z.optional(z.record(z.string(), z.string())),
  /** Name globs (`batch-*`). */
  names: z.optional(patternList),
  syncTo: z.enum(['git', 'kubernetes', 'ignore']),
});

const writeBackSchema = strictObject({
  /** Default: the track's reference, which must then be a branch. */
  branch: z.optional(reference),
  author: z._default(strictObject({ name: nonEmptyString, email: nonEmptyString }), {
    name: 'Driftless',
    email: 'driftless@localhost',
  }),
  /** Where objects that are not yet in Git are written (`include: true`). */
  path: z._default(nonEmptyString, '{namespace}/{kind}-{name}.yaml'),
  include: z._default(z.boolean(), false),
});

/**
 * Whether `auth` fits the source, for tracks and `tracksFrom` repositories
 * alike: SSH repositories take (and need) `ssh`, buckets take `s3`, other
 * Git repositories `basic`, `token` or `githubApp`.
 */
function checkAuthFits(
  value: { readonly auth?: unknown; readonly repository?: unknown; readonly bucket?: unknown },
  ctx: { addIssue: (issue: { code: 'custom'; path: string[]; message: string }) => void },
): void {
  const authType = (value.auth as { type?: string } | undefined)?.type;
  const repositoryKind =
    typeof value.repository === 'string'
      ? (classifyRepository(value.repository) as { kind?: string }).kind
      : undefined;
  const sshRepository = repositoryKind === 'ssh';
  if (sshRepository && authType !== 'ssh') {
    ctx.addIssue({
      code: 'custom',
      path: ['auth'],
      message:
        'an SSH repository needs auth: {type: ssh, secret: <private key>, knownHosts: <known_hosts lines>}',
    });
  } else if (authType === 'ssh' && repositoryKind !== undefined && !sshRepository) {
    ctx.addIssue({
      code: 'custom',
      path: ['auth', 'type'],
      message: 'ssh is for ssh:// and user@host:path repositories',
    });
  }
  if (
    authType !== undefined &&
    authType !== 'ssh' &&
    (authType === 's3') !== (value.bucket !== undefined)
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['auth', 'type'],
      message:
        authType === 's3'
          ? 's3 is for bucket tracks; a Git repository takes basic, token or githubApp'
          : `${authType} is for Git repositories; a bucket takes s3 (or no auth: the AWS default credentials)`,
    });
  }
}

/** A track's `timeout` when it sets none: how long its sync, drift check or delete may work with its cluster. */
export const DEFAULT_TRACK_TIMEOUT_MS = 120_000;

/** One track as written in `tracks:`; cluster resolution happens once all tracks are known. */
export const trackSchema = strictObject({
  name: dnsLabel,
  cluster: z.optional(dnsLabel),
  repository: z.optional(repository),
  bucket: z.optional(bucketSchema),
  reference: z.optional(reference),
  semver: z.optional(semver),
  subPath: z.optional(subPath),
  namespace: z.optional(dnsLabel),
  restrictNamespace: z._default(z.boolean(), false),
  ignoreResources: z._default(z.array(resourceType), []),
  prune: z._default(z.boolean(), true),
  adopt: z._default(z.boolean(), false),
  handEditManagers: z.optional(z.array(nonEmptyString)),
  targetNamespace: z.optional(dnsLabel),
  serviceAccountName: z.optional(dnsSubdomainName),
  retryInterval: z.optional(duration(10_000, '10s')),
  force: z._default(z.boolean(), false),
  deletionPolicy: z._default(z.enum(DELETION_POLICIES), 'MirrorPrune'),
  allowEmpty: z._default(z.boolean(), false),
  interval: z._default(duration(10_000, '10s'), 300_000),
  drift: z._default(z.enum(['correct', 'detect']), 'correct'),
  ignore: z._default(z.array(ignoreRuleSchema), []),
  dependsOn: z._default(z.array(dnsLabel), []),
  wait: z._default(z.boolean(), false),
  healthChecks: z._default(z.array(healthCheckSchema), []),
  healthCheckExprs: z.optional(healthCheckExprsSchema),
  timeout: z._default(duration(1_000, '1s'), DEFAULT_TRACK_TIMEOUT_MS),
  suspend: z._default(z.boolean(), false),
  auth: z.optional(authSchema),
  kustomize: z._default(z.union([z.literal('auto'), z.boolean()]), 'auto'),
  kustomizeRemoteResources: z._default(z.boolean(), false),
  helm: z.optional(helmSchema),
  sourceIgnore: z.optional(z.array(ignorePattern)),
  substitute: z._default(substituteValues, {}),
  substituteFrom: z._default(z.array(substituteFromSchema), []),
  decryption: z.optional(decryptionSchema),
  verify: z.optional(strictObject({ keys: z.array(secretRef).check(z.minLength(1)) })),
  rules: z._default(z.array(syncRuleSchema), []),
  writeBack: z.optional(writeBackSchema),
}).check(
  z.superRefine((value, ctx) => {
    exclusive(value, ['reference', 'semver'], false, ctx);
    exclusive(value, ['repository', 'bucket'], false, ctx);
    if (value.repository === undefined && value.bucket === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['repository'],
        message: 'is required (or bucket: for a bucket source)',
      });
    }
    if (value.bucket !== undefined) {
      for (const field of ['reference', 'semver', 'verify'] as const) {
        if (value[field] !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: 'applies to Git repositories, not to a bucket (every listing is a revision)',
          });
        }
      }
    }
    if (
      value.serviceAccountName !== undefined &&
      value.namespace === undefined &&
      value.targetNamespace === undefined
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['serviceAccountName'],
        message: 'needs namespace (or targetNamespace): the service account lives there',
      });
    }
    checkAuthFits(value, ctx);
    if (value.helm !== undefined && value.kustomize === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['kustomize'],
        message:
          'true cannot be used with helm (a track renders either a chart or a kustomization)',
      });
    }
    if (value.writeBack?.include === true) {
      // Objects added to Git from the cluster carry no Driftless label: the next sync adopts them.
      if (!value.adopt) {
        ctx.addIssue({
          code: 'custom',
          path: ['writeBack', 'include'],
          message:
            'needs adopt: true: objects added to Git from the cluster are taken over by the next sync',
        });
      }
      mappingsOf<(typeof value.rules)[number]>(value.rules).forEach(([rule, index]) => {
        if (rule.syncTo === 'git' && rule.resources === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['rules', index, 'resources'],
            message: 'is required with writeBack.include: the resources to look for new objects in',
          });
        }
      });
    }
    const writesBack = mappingsOf<(typeof value.rules)[number]>(value.rules).some(
      ([rule]) => rule.syncTo === 'git',
    );
    if (writesBack && value.bucket !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['rules'],
        message: 'syncTo: git needs a Git repository to write to, not a bucket',
      });
    } else if (
      writesBack &&
      value.writeBack?.branch === undefined &&
      (value.semver !== undefined ||
        (typeof value.reference === 'string' && !isBranchName(value.reference)))
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['writeBack', 'branch'],
        message:
          'is required: syncTo: git commits to a branch, and the track follows a tag, a commit or a semver range',
      });
    }
    if (value.restrictNamespace === true && value.namespace === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['restrictNamespace'],
        message: 'requires namespace (the namespace objects are restricted to)',
      });
    }
  }, ALWAYS),
);

/**
 * Whether a reference names a branch rather than a tag or commit: a full
 * sha, `refs/tags/...` and `v1.2.3`-like names are not taken for branches.
 */
function isBranchName(reference: string): boolean {
  if (reference.startsWith('refs/')) return reference.startsWith('refs/heads/');
  return !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(reference) && !/^v?\d+(\.\d+)*$/.test(reference);
}

/** A track after schema validation, before cluster resolution. */
export type ParsedTrack = z.output<typeof trackSchema>;

/**
 * Where deploy keys of tracks read at run time are found: a secret reference
 * that the GitTrack's namespace, secret name and key complete
 * (run-time-tracks.ts), so no GitTrack can name an arbitrary secret.
 */
const secretPrefix = field((value) => {
  if (typeof value !== 'string') return notAString(value);
  const probe = parseSecretRef(`${value}${value.startsWith('env:') ? 'X' : 'x/x'}`);
  // A bare `env:` would let a GitTrack spell any variable of the process, its AWS keys included.
  return 'error' in probe || value === 'env:'
    ? {
        ok: false,
        error: `${describeValue(value)} is not the start of a secret reference (e.g. aws-secretsmanager:driftless/git/gittracks/ or env:GITTRACK_)`,
      }
    : { ok: true, value };
});

/**
 * One `tracksFrom` entry: Faros GitTracks read from a cluster, or GitTrack
 * documents kept in a Git repository. Which cluster a repository's tracks
 * go to is settled with the cluster references (parse-config.ts).
 */
export const tracksFromSchema = strictObject({
  cluster: z.optional(dnsLabel),
  gitTracks: z.optional(z.boolean()),
  repository: z.optional(repository),
  reference: z.optional(reference),
  subPath: z.optional(subPath),
  auth: z.optional(authSchema),
  allowLocalRepositories: z._default(z.boolean(), false),
  deployKeySecrets: z.optional(secretPrefix),
}).check(
  z.superRefine((value, ctx) => {
    if (value.repository === undefined) {
      if (value.gitTracks !== true) {
        ctx.addIssue({
          code: 'custom',
          path: ['gitTracks'],
          message:
            'must be true, or give repository: GitTracks are the only objects read from a cluster',
        });
      }
      if (value.cluster === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['cluster'],
          message: 'is required: the cluster whose GitTracks are read (or give repository)',
        });
      }
      for (const field of ['reference', 'subPath', 'auth'] as const) {
        if (value[field] !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: 'applies to a repository of track documents, not to a cluster',
          });
        }
      }
    } else if (value.gitTracks !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['gitTracks'],
        message: 'cannot be used with repository; use one entry per source',
      });
    }
    checkAuthFits(value, ctx);
  }, ALWAYS),
);

/** A `tracksFrom` entry after schema validation. */
export type ParsedTracksFrom = z.output<typeof tracksFromSchema>;

/** The events a notification can be sent for (DESIGN.md, "Notifications and metrics"). */
export const NOTIFICATION_EVENTS = [
  'fetched',
  'applied',
  'failed',
  'degraded',
  'healthy',
  'drifted',
  'corrected',
  'rolledBack',
  'writtenBack',
  'suspended',
] as const;

/** The hosts a `commitStatus` receiver posts to (notify/commit-status.ts). */
export const COMMIT_STATUS_PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket'] as const;

/** What every `notifications` entry has: its name and what it is sent. */
const receiverCommon = {
  name: dnsLabel,
  tracks: z._default(patternList, ['*']),
  events: z.optional(z.array(z.enum(NOTIFICATION_EVENTS)).check(z.minLength(1))),
};

/** An SNS topic ARN (any partition); the topic may be in another region or account. */
const snsTopicArn = stringMatching(
  (t) => /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/.test(t),
  (quoted) => `${quoted} is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)`,
);

/** An EventBridge bus: `default`, a bus name or a bus ARN. */
const eventBus = stringMatching(
  (t) =>
    /^[A-Za-z0-9._-]{1,256}$/.test(t) ||
    /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._-]{1,256}$/.test(t),
  (quoted) => `${quoted} is not an EventBridge bus name or ARN`,
);

/**
 * One `notifications` entry, by `type`: incoming webhooks of Slack and
 * Microsoft Teams, a generic (optionally signed) webhook, commit statuses
 * on the track's Git host, and in AWS an SNS topic or an EventBridge bus.
 */
const notificationSchema = z.discriminatedUnion('type', [
  strictObject({
    ...receiverCommon,
    type: z.enum(['slack', 'msteams']),
    /** The incoming-webhook URL: a secret, since whoever has it can post. */
    url: secretRef,
  }),
  strictObject({
    ...receiverCommon,
    type: z.literal('webhook'),
    url: secretRef,
    /** Signs each body with an HMAC (`X-Driftless-Signature: sha256=<hex>`). */
    secret: z.optional(secretRef),
  }),
  strictObject({
    ...receiverCommon,
    type: z.literal('commitStatus'),
    /** Unset: read from the repository URL's host (github.com, gitlab.com, bitbucket.org). */
    provider: z.optional(z.enum(COMMIT_STATUS_PROVIDERS)),
    /** An API token allowed to set commit statuses; read by the step holding Git credentials. */
    token: secretRef,
    /** The host's API root, for self-hosted hosts; unset: derived from the repository URL. */
    apiUrl: z.optional(httpUrl),
  }),
  strictObject({ ...receiverCommon, type: z.literal('sns'), topicArn: snsTopicArn }),
  strictObject({
    ...receiverCommon,
    type: z.literal('eventbridge'),
    eventBus: z._default(eventBus, 'default'),
  }),
]);

/**
 * `dashboard`: where people open it (commit statuses link there), who may
 * read and act in `driftless serve`, and how API Gateway authenticates the
 * dashboard function in AWS.
 */
const dashboardSchema = strictObject({
  url: z.optional(httpUrl),
  readAccess: z._default(z.enum(['open', 'authenticated']), 'authenticated'),
  users: z._default(z.array(strictObject({ name: nonEmptyString, password: secretRef })), []),
  tokens: z._default(z.array(secretRef), []),
  authorizer: z._default(
    z.discriminatedUnion('type', [
      strictObject({ type: z.literal('iam') }),
      strictObject({
        type: z.literal('jwt'),
        issuer: httpsUrl,
        audience: z.array(nonEmptyString).check(z.minLength(1)),
      }),
    ]),
    { type: 'iam' },
  ),
}).check(
  z.superRefine((value, ctx) => {
    const seen = new Set<string>();
    mappingsOf<(typeof value.users)[number]>(value.users).forEach(([user, index]) => {
      if (seen.has(user.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['users', index, 'name'],
          message: `user "${user.name}" is listed twice`,
          input: user.name,
        });
      }
      seen.add(user.name);
    });
  }, ALWAYS),
);

/**
 * The top level of `driftless.yaml`. `tracks` and `tracksFrom` are only
 * checked to be lists here: each entry is parsed on its own (see the module
 * comment).
 */
export const configSchema = strictObject({
  store: z._default(storeSchema, { type: 'fs', path: '.driftless/store' }),
  clusters: z._default(z.array(clusterSchema), []),
  webhooks: z._default(webhooksSchema, {}),
  tracks: z._default(z.array(z.unknown()), []),
  tracksFrom: z._default(z.array(z.unknown()), []),
  notifications: z._default(z.array(notificationSchema), []),
  dashboard: z.optional(dashboardSchema),
});

/** The top level after schema validation. */
export type ParsedConfig = z.output<typeof configSchema>;

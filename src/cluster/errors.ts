import { DriftlessError } from '../errors.ts';

/** What the API server said when it refused a request (its Status object). */
export interface ApiStatus {
  readonly code: number;
  readonly reason?: string | undefined;
  readonly message?: string | undefined;
  readonly causes?: readonly { reason?: string; message?: string; field?: string }[] | undefined;
}

/** The API server refused or failed a request about one object. Messages start with the subject. */
export class KubernetesApiError extends DriftlessError {
  readonly code = 'KUBE_API';

  constructor(
    readonly subject: string,
    readonly status: ApiStatus,
    options?: { cause?: unknown },
  ) {
    super(`${subject}: ${status.message ?? status.reason ?? `HTTP ${status.code}`}`, options);
  }

  /** HTTP status code of the answer. */
  get httpStatus(): number {
    return this.status.code;
  }

  /**
   * An immutable field was changed (Secret/ConfigMap `immutable`, a Job's template, a selector,
   * a Service's clusterIP, a StatefulSet's volumeClaimTemplates, ...): the one refusal that
   * replacing the object (force, `update-strategy: recreate`) answers. Any other 422 — a
   * negative replica count, an invalid label — would be refused again after the delete. So
   * when the answer lists its causes, every one of them must be an immutable field: an
   * immutable change together with an invalid value is refused as a whole.
   */
  get isImmutableFieldChange(): boolean {
    if (this.status.code !== 422) return false;
    const causes = this.status.causes ?? [];
    if (causes.length === 0) return IMMUTABLE_FIELD_MESSAGES.test(this.status.message ?? '');
    return causes.every((cause) => IMMUTABLE_FIELD_MESSAGES.test(cause.message ?? ''));
  }
}

/**
 * How the API server words an immutable-field refusal: "field is immutable" (most types; "spec
 * is immutable after creation" for volumes),
 * "may not change once set" (a Service's clusterIP), "updates to statefulset spec for fields
 * other than … are forbidden", "… cannot be changed" / "may not be changed".
 */
const IMMUTABLE_FIELD_MESSAGES =
  /\bis immutable\b|may not be changed|cannot be changed|may not change once set|updates to \S+ spec for fields other than .* are forbidden/i;

/** The API server answered, refusing the credentials (401) or what they may do (403). */
export class ClusterAuthError extends DriftlessError {
  readonly code = 'CLUSTER_AUTH_FAILED';
}

/** The cluster could not be reached at all (connection refused, TLS, timeout). */
export class ClusterUnreachableError extends DriftlessError {
  readonly code = 'CLUSTER_UNREACHABLE';
}

/** No API resource serves this apiVersion and kind (missing CRD, typo, removed API). */
export class UnknownResourceError extends DriftlessError {
  readonly code = 'UNKNOWN_RESOURCE';

  constructor(
    readonly apiVersion: string,
    readonly kind: string,
    subject?: string,
  ) {
    super(
      `${subject ? `${subject}: ` : ''}no API resource serves ${apiVersion} ${kind}; is its CRD installed?`,
    );
  }
}

/** A kubeconfig is missing, malformed, or uses something not supported; the message names the file and field. */
export class KubeconfigError extends DriftlessError {
  readonly code = 'KUBECONFIG';
}

/** A credential plugin or token file could not produce credentials. */
export class CredentialError extends DriftlessError {
  readonly code = 'CREDENTIALS';
}

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

  /** An immutable field was changed (Secret/ConfigMap `immutable`, Job selector, Service clusterIP, ...). */
  get isImmutableFieldChange(): boolean {
    if (this.status.code !== 422) return false;
    const text = [this.status.message, ...(this.status.causes ?? []).map((c) => c.message)].join(
      ' ',
    );
    return /immutable|may not be changed|cannot be changed|field is immutable/i.test(text);
  }
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

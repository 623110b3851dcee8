/**
 * The identity a track acts with in its cluster. With `serviceAccountName`,
 * apply, prune, health checks and drift correction run as
 * `system:serviceaccount:<namespace>:<name>` through impersonation (as Flux's
 * kustomize-controller does), so the track can do exactly what that account's
 * RBAC allows and the API server's refusals name the account.
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';

/** The cluster connection cannot impersonate (a port without the capability). */
export class ImpersonationUnavailableError extends DriftlessError {
  readonly code = 'IMPERSONATION_UNAVAILABLE';
}

type Acting = Pick<Track, 'name'> &
  Partial<Pick<Track, 'serviceAccountName' | 'namespace' | 'targetNamespace'>>;

/** The service account's user name, or undefined when the track acts with Driftless' own rights. */
export function serviceAccountUser(track: Acting): string | undefined {
  if (track.serviceAccountName === undefined) return undefined;
  const namespace = track.targetNamespace ?? track.namespace;
  return `system:serviceaccount:${namespace}:${track.serviceAccountName}`;
}

/** `cluster` as the track acts in it: impersonating its service account when it names one. */
export function actingAs(cluster: KubernetesPort, track: Acting): KubernetesPort {
  const user = serviceAccountUser(track);
  if (user === undefined) return cluster;
  if (cluster.impersonate === undefined) {
    throw new ImpersonationUnavailableError(
      `track "${track.name}": this cluster connection cannot impersonate ${user}`,
    );
  }
  const namespace = track.targetNamespace ?? track.namespace;
  // The groups the API server gives a service account's own tokens.
  return cluster.impersonate(user, [
    'system:serviceaccounts',
    `system:serviceaccounts:${namespace}`,
    'system:authenticated',
  ]);
}

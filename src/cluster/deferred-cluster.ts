/**
 * A cluster port over a connection still being made. Each request waits for
 * the connection, so a connection that cannot be made (a kubeconfig that
 * does not parse, a credential that cannot be read) fails the first request
 * a use-case makes — under its lease, where it is recorded in the track's
 * status and history — rather than the command before any track began.
 */
import { DriftlessError } from '../errors.ts';
import type { KubernetesPort } from './kubernetes-port.ts';

/** The connection made cannot do what was asked of it (impersonate, replace managed fields). */
export class ClusterOperationUnavailableError extends DriftlessError {
  readonly code = 'CLUSTER_OPERATION_UNAVAILABLE';
}

export function deferredCluster(connection: Promise<KubernetesPort>): KubernetesPort {
  // A job that never asks the cluster anything (suspend, say) never awaits it: its failure is
  // then no one's to report, and must not end the process as an unhandled rejection.
  connection.catch(() => undefined);
  return {
    discover: async (refresh) => (await connection).discover(refresh),
    serverVersion: async () => (await connection).serverVersion(),
    apply: async (object, options) => (await connection).apply(object, options),
    get: async (ref) => (await connection).get(ref),
    list: async (query) => (await connection).list(query),
    delete: async (ref, options) => (await connection).delete(ref, options),
    replaceManagedFields: async (ref, resourceVersion, entries) => {
      const port = await connection;
      if (port.replaceManagedFields === undefined) {
        throw new ClusterOperationUnavailableError(
          'this cluster connection cannot replace managed fields',
        );
      }
      return port.replaceManagedFields(ref, resourceVersion, entries);
    },
    impersonate: (user, groups) =>
      deferredCluster(
        connection.then((port) => {
          if (port.impersonate === undefined) {
            throw new ClusterOperationUnavailableError(
              `this cluster connection cannot impersonate ${user}`,
            );
          }
          return port.impersonate(user, groups);
        }),
      ),
    // A port that cannot cancel its requests is used as it is: bounded-cluster.ts stops
    // waiting for it.
    withSignal: (signal) =>
      deferredCluster(connection.then((port) => port.withSignal?.(signal) ?? port)),
  };
}

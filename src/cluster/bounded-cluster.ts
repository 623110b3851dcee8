/**
 * A cluster port whose every request ends when a signal aborts (a track's
 * deadline, sync/track-cluster.ts). Each request has its own idle timeout
 * (kube-connection.ts, 60 s by default), renewed by every byte, so a server
 * that answers slowly, or takes connections and never answers, could hold a
 * job for much longer than the track's timeout; this holds it to the signal.
 *
 * Two layers: requests the port sends for the caller get the signal and are
 * cancelled on their connection (KubernetesPort.withSignal); and every call
 * is raced against the signal, so what the port waits for besides its own
 * requests (a shared discovery, a connection still being made, credentials
 * from an exec plugin, a port that cannot cancel) ends the call too. A call
 * made once the signal aborted sends nothing.
 */
import { ClusterOperationUnavailableError } from './deferred-cluster.ts';
import type { KubernetesPort } from './kubernetes-port.ts';
import { untilAborted } from './until-aborted.ts';

/** `port`, every call rejecting with `signal`'s reason once it aborts. */
export function boundedCluster(port: KubernetesPort, signal: AbortSignal): KubernetesPort {
  // Made at the first call: a job that sends nothing (a pinned track) touches nothing.
  let cancelling: KubernetesPort | undefined;
  const bound = <T>(call: (on: KubernetesPort) => Promise<T>): Promise<T> => {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    cancelling ??= port.withSignal?.(signal) ?? port;
    return untilAborted(call(cancelling), signal);
  };
  const { impersonate } = port;
  return {
    discover: (refresh) => bound((on) => on.discover(refresh)),
    serverVersion: () => bound((on) => on.serverVersion()),
    apply: (object, options) => bound((on) => on.apply(object, options)),
    get: (ref) => bound((on) => on.get(ref)),
    list: (query) => bound((on) => on.list(query)),
    delete: (ref, options) => bound((on) => on.delete(ref, options)),
    ...(port.replaceManagedFields === undefined
      ? {}
      : {
          replaceManagedFields: (ref, resourceVersion, entries) =>
            bound(async (on) => {
              if (on.replaceManagedFields === undefined) {
                throw new ClusterOperationUnavailableError(
                  'this cluster connection cannot replace managed fields',
                );
              }
              return on.replaceManagedFields(ref, resourceVersion, entries);
            }),
        }),
    ...(impersonate === undefined
      ? {}
      : {
          impersonate: (user, groups) =>
            boundedCluster(impersonate.call(port, user, groups), signal),
        }),
  };
}

/**
 * A cluster port that stands in for a hung API server: it takes requests and answers none of
 * those a test picks. No signal reaches them (no withSignal), and no request timeout of its own
 * ends them: only the caller's giving up (a deadline) ends the wait.
 */
import type { KubernetesPort } from '../../../src/cluster/kubernetes-port.ts';

/** One call to the cluster port, as {@link hangingOn} tells them apart. */
export interface Call {
  readonly method: 'discover' | 'serverVersion' | 'apply' | 'get' | 'list' | 'delete';
  readonly kind?: string;
  readonly name?: string;
  readonly dryRun?: boolean;
  readonly subresource?: string;
}

/** A port that leaves some calls unanswered for good; how many, and a wait for the first. */
export type HangingPort = KubernetesPort & {
  readonly hung: () => number;
  readonly firstHang: Promise<void>;
};

/** `cluster`, except that the calls `hangs` picks are never answered. */
export function hangingOn(cluster: KubernetesPort, hangs: (call: Call) => boolean): HangingPort {
  let hung = 0;
  let hangStarted: () => void = () => undefined;
  const firstHang = new Promise<void>((resolve) => (hangStarted = resolve));
  const answer = <T>(call: Call, work: () => Promise<T>): Promise<T> => {
    if (!hangs(call)) return work();
    hung++;
    hangStarted();
    return new Promise<T>(() => undefined);
  };
  return {
    hung: () => hung,
    firstHang,
    discover: () => answer({ method: 'discover' }, () => cluster.discover()),
    serverVersion: () => answer({ method: 'serverVersion' }, () => cluster.serverVersion()),
    apply: (object, options) =>
      answer(
        {
          method: 'apply',
          kind: object.kind,
          name: object.metadata.name,
          dryRun: options.dryRun === true,
          ...(options.subresource === undefined ? {} : { subresource: options.subresource }),
        },
        () => cluster.apply(object, options),
      ),
    get: (ref) => answer({ method: 'get', kind: ref.kind, name: ref.name }, () => cluster.get(ref)),
    list: (query) => answer({ method: 'list', kind: query.kind }, () => cluster.list(query)),
    delete: (ref) =>
      answer({ method: 'delete', kind: ref.kind, name: ref.name }, () => cluster.delete(ref)),
  };
}

/**
 * Whether `promise` has settled, once what is ready to run has run: with the timers mocked, a
 * test tells a wait cut at its deadline from one still hanging.
 */
export async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

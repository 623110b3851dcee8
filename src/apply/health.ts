/**
 * Readiness the kstatus way: each kind's status tells whether the object has
 * become what its spec asks for (Current), is getting there (InProgress), or
 * has given up (Failed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { objectKey, subjectOf, type KubeObject, type ObjectRef } from '../cluster/kube-object.ts';
import { KubernetesApiError } from '../cluster/errors.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { messageOf } from '../errors.ts';

export type HealthState = 'Current' | 'InProgress' | 'Failed' | 'NotFound';

export interface HealthResult {
  readonly subject: string;
  readonly state: HealthState;
  readonly message: string;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

type Status = Record<string, unknown> & { conditions?: Condition[]; observedGeneration?: number };

const num = (value: unknown, fallback = 0): number =>
  typeof value === 'number' ? value : fallback;

function condition(status: Status, type: string): Condition | undefined {
  return status.conditions?.find((c) => c.type === type);
}

export type Judgement = { state: Exclude<HealthState, 'NotFound'>; message: string };
const current = (message = 'ready'): Judgement => ({ state: 'Current', message });
const inProgress = (message: string): Judgement => ({ state: 'InProgress', message });

function deployment(spec: Record<string, unknown>, status: Status): Judgement {
  const progressing = condition(status, 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    return { state: 'Failed', message: progressing.message ?? 'progress deadline exceeded' };
  }
  const wanted = num(spec.replicas, 1);
  const updated = num(status.updatedReplicas);
  const available = num(status.availableReplicas);
  const total = num(status.replicas);
  if (updated < wanted) return inProgress(`${updated} of ${wanted} replicas updated`);
  if (total > updated) return inProgress(`${total - updated} old replicas pending termination`);
  if (available < wanted) return inProgress(`${available} of ${wanted} replicas available`);
  return current(`${available} of ${wanted} replicas available`);
}

function statefulSet(spec: Record<string, unknown>, status: Status): Judgement {
  const wanted = num(spec.replicas, 1);
  const ready = num(status.readyReplicas);
  if (ready < wanted) return inProgress(`${ready} of ${wanted} replicas ready`);
  const strategy = (spec.updateStrategy as { type?: string } | undefined)?.type ?? 'RollingUpdate';
  if (strategy === 'RollingUpdate' && status.updateRevision !== status.currentRevision) {
    return inProgress(`rolling update to revision ${String(status.updateRevision)} in progress`);
  }
  return current(`${ready} of ${wanted} replicas ready`);
}

function daemonSet(status: Status): Judgement {
  const desired = num(status.desiredNumberScheduled);
  const updated = num(status.updatedNumberScheduled);
  const available = num(status.numberAvailable);
  if (updated < desired) return inProgress(`${updated} of ${desired} pods updated`);
  if (available < desired) return inProgress(`${available} of ${desired} pods available`);
  return current(`${available} of ${desired} pods available`);
}

function job(status: Status): Judgement {
  const failed = condition(status, 'Failed');
  if (failed?.status === 'True')
    return { state: 'Failed', message: failed.message ?? failed.reason ?? 'job failed' };
  if (condition(status, 'Complete')?.status === 'True') return current('job complete');
  return inProgress(
    `job running: ${num(status.succeeded)} succeeded, ${num(status.active)} active`,
  );
}

function byConditions(status: Status): Judgement {
  const stalled = condition(status, 'Stalled');
  if (stalled?.status === 'True')
    return { state: 'Failed', message: stalled.message ?? stalled.reason ?? 'stalled' };
  const ready = condition(status, 'Ready');
  if (ready && ready.status !== 'True') {
    return inProgress(`Ready is ${ready.status}${ready.message ? `: ${ready.message}` : ''}`);
  }
  return current();
}

/**
 * A track's own verdict on an object (its CEL `healthCheckExprs`,
 * health-exprs.ts), or undefined to judge it the built-in way. Passed in,
 * so that only what judges health carries a CEL parser.
 */
export type CustomHealth = (object: KubeObject) => Judgement | undefined;

/** Judges one object's readiness: by `custom` when it has a verdict, else from its status. */
export function healthOf(object: KubeObject, custom?: CustomHealth): Judgement {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const status = (object.status ?? {}) as Status;
  const generation = object.metadata.generation;
  // Before any verdict, a track's own included (as Flux's kstatus does): a status its
  // controller wrote for an older spec says nothing about the one just applied.
  if (
    typeof generation === 'number' &&
    typeof status.observedGeneration === 'number' &&
    status.observedGeneration < generation
  ) {
    return inProgress(
      `generation ${generation} not yet observed (observed ${status.observedGeneration})`,
    );
  }
  const own = custom?.(object);
  if (own !== undefined) return own;
  switch (object.kind) {
    case 'Deployment':
      return deployment(spec, status);
    case 'StatefulSet':
      return statefulSet(spec, status);
    case 'DaemonSet':
      return daemonSet(status);
    case 'Job':
      return job(status);
    case 'CustomResourceDefinition':
      return condition(status, 'Established')?.status === 'True'
        ? current('established')
        : inProgress('not established yet');
    case 'Namespace':
      return status.phase === 'Active'
        ? current('active')
        : inProgress(`phase ${String(status.phase ?? 'unknown')}`);
    case 'PersistentVolumeClaim':
      return status.phase === 'Bound'
        ? current('bound')
        : inProgress(`phase ${String(status.phase ?? 'Pending')}`);
    case 'Service': {
      if (spec.type !== 'LoadBalancer') return current();
      const ingress = (status.loadBalancer as { ingress?: unknown[] } | undefined)?.ingress;
      return ingress && ingress.length > 0
        ? current('load balancer ready')
        : inProgress('waiting for a load balancer address');
    }
    case 'Pod': {
      if (status.phase === 'Succeeded') return current('succeeded');
      if (status.phase === 'Failed') return { state: 'Failed', message: 'pod failed' };
      return condition(status, 'Ready')?.status === 'True'
        ? current()
        : inProgress('pod not ready');
    }
    default:
      return byConditions(status);
  }
}

export interface WaitForHealthResult {
  readonly healthy: boolean;
  /** Why the wait was given up before the objects were judged (a newer revision was queued). */
  readonly cancelled?: string;
  /** The last judgement of every object, in the order given. */
  readonly results: readonly HealthResult[];
}

/**
 * Polls `refs` until all are Current, one Failed, or `timeoutMs` passed.
 * The results name every object that is not ready and why.
 *
 * `observed` holds copies of objects read moments ago (the apply's answers,
 * the LIST before it). The first poll takes an object that is Current in its
 * copy as Current, and reads every other one as before, so nothing is judged
 * not ready or failed from a copy. What is Current at once — a ConfigMap, an
 * unchanged Deployment with its replicas available — then costs no request
 * (500 ConfigMaps: 500 GETs fewer per sync).
 */
export async function waitForHealth(
  cluster: KubernetesPort,
  refs: readonly ObjectRef[],
  timeoutMs: number,
  intervalMs = 500,
  custom?: CustomHealth,
  /** Asked between polls: a reason to stop waiting, or undefined to go on. */
  cancelled?: () => Promise<string | undefined>,
  observed?: ReadonlyMap<string, KubeObject>,
): Promise<WaitForHealthResult> {
  // The monotonic clock: a change of the system's clock neither cuts nor stretches the wait.
  const deadline = performance.now() + timeoutMs;
  for (let poll = 0; ; poll++) {
    const results = await Promise.all(
      refs.map(async (ref): Promise<HealthResult> => {
        const subject = subjectOf(ref);
        try {
          const seen = poll === 0 ? observed?.get(objectKey(ref)) : undefined;
          const judged = seen === undefined ? undefined : healthOf(seen, custom);
          if (judged?.state === 'Current') return { subject, ...judged };
          const live = await cluster.get(ref);
          if (!live) return { subject, state: 'NotFound', message: 'not found' };
          return { subject, ...healthOf(live, custom) };
        } catch (error) {
          // A request refused as malformed never succeeds (a health check that names a
          // namespaced object without its namespace): it fails now, not after the timeout.
          // Anything else (a timeout, a kind not served yet) may pass on a later poll.
          const api = error instanceof KubernetesApiError ? error : undefined;
          return {
            subject,
            state: api?.httpStatus === 400 ? 'Failed' : 'InProgress',
            // Errors start with the subject (UnknownResourceError, KubernetesApiError): the
            // result names it once.
            message: api?.status.message ?? withoutSubject(messageOf(error), subject),
          };
        }
      }),
    );
    const healthy = results.every((r) => r.state === 'Current');
    const failed = results.some((r) => r.state === 'Failed');
    if (healthy || failed || performance.now() >= deadline) return { healthy, results };
    const reason = await cancelled?.();
    if (reason !== undefined) return { healthy: false, results, cancelled: reason };
    await sleep(intervalMs);
  }
}

/** `subject: why` for each object that is not ready, for status messages. */
export function describeUnhealthy(health: WaitForHealthResult): string {
  return health.results
    .filter((r) => r.state !== 'Current')
    .map((r) => `${r.subject}: ${r.message}`)
    .join('; ');
}

/** `message` without a leading `subject: `. */
function withoutSubject(message: string, subject: string): string {
  return message.startsWith(`${subject}: `) ? message.slice(subject.length + 2) : message;
}

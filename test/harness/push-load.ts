/**
 * Push load for a stack that takes webhooks (`driftless serve`, the
 * functions under serverless-offline): many tracks, each its own repository
 * on the test Git server, each pushed several real commits in a row, every
 * push followed at once by its signed GitHub delivery — all tracks at the
 * same time. Shared by test/e2e/load.test.ts (correctness) and
 * bench/webhook-load.ts (answer latency).
 *
 * What the cluster saw is recorded by a watch on the tracks' ConfigMaps:
 * one stream, in the order etcd committed the writes, so two applies of one
 * track that ran at once show as interleaved writes of two pushes, whatever
 * the clocks of the processes say.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { pushFiles, type GitRepository, type GitServer } from './git-server.ts';
import type { ServerlessOffline } from './serverless-offline.ts';

/** Before a delivery not answered 2xx is sent again. */
const REDELIVERY_DELAY_MS = 1_000;

/**
 * Whether an attempt was answered 2xx by the stack itself. serverless-offline
 * answers a Lambda timeout with 200 and the error as body, where API Gateway
 * answers 5xx: that counts as not answered.
 */
export function answeredByStack(attempt: DeliveryAttempt): boolean {
  const lambdaError =
    typeof attempt.answer === 'object' && attempt.answer !== null && 'errorType' in attempt.answer;
  return attempt.status >= 200 && attempt.status < 300 && !lambdaError;
}

/** The label every object a track applies carries. */
const TRACK_LABEL = 'driftless.dev/track';

/** A track of the load: its name in driftless.yaml and its repository. */
export interface LoadTrack {
  readonly name: string;
  readonly repo: GitRepository;
}

/** A delivery as GitHub sends it: the JSON body and the headers, signed. */
export interface SignedDelivery {
  readonly id: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A push delivery for `after` on `main`, signed with `secret` as GitHub signs it. */
export function githubPush(
  repo: GitRepository,
  push: { before: string; after: string },
  secret: string,
  id: string = randomUUID(),
): SignedDelivery {
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    before: push.before,
    after: push.after,
    repository: {
      clone_url: repo.url,
      html_url: repo.url.replace(/\.git$/, ''),
      default_branch: 'main',
    },
  });
  return {
    id,
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': id,
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
  };
}

/** Creates `count` repositories, one per track, named `<prefix>-<i>`. */
export async function createLoadTracks(
  git: GitServer,
  prefix: string,
  count: number,
): Promise<LoadTrack[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const name = `${prefix}-${i}`;
      return { name, repo: await git.createRepository(name) };
    }),
  );
}

/**
 * The `tracks:` entries of driftless.yaml for `tracks`, all in `namespace`,
 * with basic auth from `env:<credentialsVariable>`. The interval is long:
 * only the deliveries may deploy, a poll would hide a lost one.
 */
export function loadTrackLines(
  tracks: readonly LoadTrack[],
  namespace: string,
  credentialsVariable: string,
): string[] {
  return tracks.flatMap((track) => [
    `  - name: ${track.name}`,
    `    repository: ${track.repo.url}`,
    `    namespace: ${namespace}`,
    '    interval: 1h',
    `    auth: {type: basic, secret: env:${credentialsVariable}}`,
  ]);
}

/** The name of the `i`th object of `track`. */
export function loadObjectName(track: string, i: number): string {
  return `${track}-cm-${String(i).padStart(2, '0')}`;
}

/**
 * The files of push number `push` of `track`: `objects` ConfigMaps, each
 * carrying the push number, so every push changes every object.
 */
export function loadManifests(
  track: string,
  push: number,
  objects: number,
): Record<string, string> {
  const documents = Array.from(
    { length: objects },
    (_, i) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${loadObjectName(track, i)}\ndata:\n  track: ${track}\n  push: "${push}"\n`,
  );
  return { 'objects.yaml': documents.join('---\n') };
}

/** One delivery of the load and how it was answered. */
export interface LoadDelivery {
  readonly track: string;
  /** 1 for a track's first push. */
  readonly push: number;
  readonly sha: string;
  readonly id: string;
  /** The last attempt's HTTP status; 0 when no answer came (the error is in `error`). */
  readonly status: number;
  readonly answer: unknown;
  readonly error?: string;
  /** When the request was first sent (ms since the epoch): the push was done by then. */
  readonly sentAt: number;
  /** The first attempt: from the request's start to the end of the answer's body, in ms. */
  readonly latencyMs: number;
  /** Every attempt: the first, then the redeliveries of a delivery not answered 2xx. */
  readonly attempts: readonly DeliveryAttempt[];
}

/** One sending of a delivery. */
export interface DeliveryAttempt {
  readonly status: number;
  readonly latencyMs: number;
  readonly answer: unknown;
  readonly error?: string;
}

export interface PushLoadOptions {
  readonly tracks: readonly LoadTrack[];
  /** Commits pushed to each track, one after the other; default 5. */
  readonly pushes?: number;
  /** ConfigMaps in each commit; default 10. */
  readonly objects?: number;
  /** The webhook secret the deliveries are signed with. */
  readonly secret: string;
  /** Number of the first push (for a second load on the same tracks); default 1. */
  readonly firstPush?: number;
  /** The sha the first push builds on, per track (`before` of its delivery); default zeros. */
  readonly previous?: ReadonlyMap<string, string>;
  /**
   * Wait after each of a track's pushes before its next one, in ms, for the
   * `i`th track; default none. Spacing the pushes lets more of them be
   * applied (a track applies only the newest revision it knows of); pushes
   * in a burst make a track's sync jobs contend for it.
   */
  readonly spacingMs?: (i: number) => number;
  /**
   * How many times a delivery not answered 2xx is sent again, the same id
   * and body, as a host's "redeliver" does; default 0.
   */
  readonly redeliveries?: number;
  /** Sends one delivery to the stack. */
  readonly post: (delivery: SignedDelivery) => Promise<Response>;
}

export interface PushLoadResult {
  readonly deliveries: LoadDelivery[];
  /** Each track's last pushed sha. */
  readonly heads: Map<string, string>;
  /** From the first push's start to the last answer, in ms. */
  readonly elapsedMs: number;
}

/**
 * Runs the load: every track at once, each pushing its commits in a row
 * and sending each push's delivery as soon as the push is done, without
 * waiting for the answer (a host does not wait for one either before the
 * next push). Resolves once every delivery is answered or failed.
 */
export async function runPushLoad(options: PushLoadOptions): Promise<PushLoadResult> {
  const pushes = options.pushes ?? 5;
  const objects = options.objects ?? 10;
  const first = options.firstPush ?? 1;
  const heads = new Map<string, string>();
  const started = performance.now();

  const attempt = async (delivery: SignedDelivery): Promise<DeliveryAttempt> => {
    const sent = performance.now();
    try {
      const response = await options.post(delivery);
      const text = await response.text();
      let answer: unknown = text;
      try {
        answer = JSON.parse(text);
      } catch {
        // Not JSON: kept as text, for the failure message.
      }
      return { status: response.status, answer, latencyMs: performance.now() - sent };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { status: 0, answer: undefined, error: message, latencyMs: performance.now() - sent };
    }
  };

  const send = async (
    track: LoadTrack,
    push: number,
    sha: string,
    delivery: SignedDelivery,
  ): Promise<LoadDelivery> => {
    const sentAt = Date.now();
    const attempts = [await attempt(delivery)];
    while (!answeredByStack(attempts.at(-1)!) && attempts.length <= (options.redeliveries ?? 0)) {
      await sleep(REDELIVERY_DELAY_MS);
      attempts.push(await attempt(delivery));
    }
    const last = attempts.at(-1)!;
    return {
      track: track.name,
      push,
      sha,
      id: delivery.id,
      sentAt,
      status: last.status,
      answer: last.answer,
      ...(last.error === undefined ? {} : { error: last.error }),
      latencyMs: attempts[0]!.latencyMs,
      attempts,
    };
  };

  const answered = await Promise.all(
    options.tracks.map(async (track, i) => {
      const spacing = options.spacingMs?.(i) ?? 0;
      const sent: Promise<LoadDelivery>[] = [];
      let before = options.previous?.get(track.name) ?? '0'.repeat(40);
      for (let push = first; push < first + pushes; push++) {
        const sha = await pushFiles(track.repo, loadManifests(track.name, push, objects), {
          message: `push ${push}`,
        });
        const delivery = githubPush(track.repo, { before, after: sha }, options.secret);
        sent.push(send(track, push, sha, delivery));
        before = sha;
        if (spacing > 0 && push < first + pushes - 1) await sleep(spacing);
      }
      heads.set(track.name, before);
      return Promise.all(sent);
    }),
  );
  return { deliveries: answered.flat(), heads, elapsedMs: performance.now() - started };
}

/** One write of a track's object, as the watch reported it. */
export interface ObservedWrite {
  /** Its place in the watch's stream: the order etcd committed the writes. */
  readonly seq: number;
  /** When the watch reported it (ms since the epoch, this process' clock). */
  readonly at: number;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly track: string;
  readonly name: string;
  readonly resourceVersion: string;
  /** The push number the object carries; NaN when it carries none. */
  readonly push: number;
}

export interface ObjectWatch {
  /** Every write so far, in the stream's order. */
  writes(): ObservedWrite[];
  /** Why the watch ended before stop(), if it did: its record is then incomplete. */
  failure(): string | undefined;
  stop(): void;
}

/** Starts watching the ConfigMaps that carry a track label in `namespace`. */
export async function watchTrackObjects(kc: KubeConfig, namespace: string): Promise<ObjectWatch> {
  const writes: ObservedWrite[] = [];
  let ended: string | undefined;
  let stopped = false;
  const controller = await new Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { labelSelector: TRACK_LABEL },
    (type, object: { metadata?: Record<string, unknown>; data?: Record<string, string> }) => {
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
      const metadata = object.metadata ?? {};
      const labels = (metadata.labels ?? {}) as Record<string, string>;
      writes.push({
        seq: writes.length,
        at: Date.now(),
        type,
        track: labels[TRACK_LABEL] ?? '',
        name: String(metadata.name),
        resourceVersion: String(metadata.resourceVersion),
        push: Number(object.data?.push ?? Number.NaN),
      });
    },
    (error: unknown) => {
      if (!stopped) ended = error ? String(error) : 'the API server closed the watch';
    },
  );
  return {
    writes: () => [...writes],
    failure: () => ended,
    stop: () => {
      stopped = true;
      controller.abort();
    },
  };
}

/** The cluster writes of one push of one track: from its first write to its last. */
export interface ApplyWindow {
  readonly track: string;
  readonly push: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly from: number;
  readonly to: number;
  readonly writes: number;
}

/** Each track's windows, ordered by their first write. */
export function applyWindows(writes: readonly ObservedWrite[]): Map<string, ApplyWindow[]> {
  const byKey = new Map<string, ApplyWindow>();
  for (const write of writes) {
    if (write.type === 'DELETED') continue;
    const key = `${write.track}\n${write.push}`;
    const window = byKey.get(key);
    byKey.set(
      key,
      window
        ? { ...window, lastSeq: write.seq, to: write.at, writes: window.writes + 1 }
        : {
            track: write.track,
            push: write.push,
            firstSeq: write.seq,
            lastSeq: write.seq,
            from: write.at,
            to: write.at,
            writes: 1,
          },
    );
  }
  const tracks = new Map<string, ApplyWindow[]>();
  for (const window of byKey.values()) {
    tracks.set(window.track, [...(tracks.get(window.track) ?? []), window]);
  }
  for (const windows of tracks.values()) windows.sort((a, b) => a.firstSeq - b.firstSeq);
  return tracks;
}

/**
 * Pairs of one track's windows that overlap: a push's writes began before
 * the previous push's writes were over. Empty when the applies ran one at a time.
 */
export function overlappingWindows(
  windows: ReadonlyMap<string, readonly ApplyWindow[]>,
): [ApplyWindow, ApplyWindow][] {
  const pairs: [ApplyWindow, ApplyWindow][] = [];
  for (const list of windows.values()) {
    for (let i = 1; i < list.length; i++) {
      for (let j = 0; j < i; j++) {
        if ((list[j] as ApplyWindow).lastSeq > (list[i] as ApplyWindow).firstSeq) {
          pairs.push([list[j] as ApplyWindow, list[i] as ApplyWindow]);
        }
      }
    }
  }
  return pairs;
}

/**
 * Starts `count` instances of the webhook, fetch and apply functions under
 * serverless-offline before a load, as Lambda's warm sandboxes (or provisioned
 * concurrency) would be there. serverless-offline starts a worker thread per
 * concurrent invocation, all in one process: on two shared cores, ten cold
 * starts at once take the webhook past its 10 s timeout. A webhook instance
 * is warmed by an unsigned delivery (answered 401: its config and secrets
 * are read), fetch and apply by an empty SQS batch. Rounds are repeated
 * until one where every webhook answered 401 (an instance that timed out is
 * gone), at most `rounds` times; resolves with the rounds it took.
 */
export async function warmFunctions(
  offline: ServerlessOffline,
  count: number,
  rounds = 4,
): Promise<number> {
  for (let round = 1; ; round++) {
    const answers = await Promise.all(
      Array.from({ length: count }, async () => {
        const [webhook] = await Promise.all([
          fetch(`${offline.httpUrl}/webhook/github`, {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json', 'x-github-event': 'push' },
          }).then(
            (response) => response.status,
            () => 0,
          ),
          offline.invoke('fetch', { Records: [] }),
          offline.invoke('apply', { Records: [] }),
        ]);
        return webhook;
      }),
    );
    if (answers.every((status) => status === 401) || round >= rounds) return round;
  }
}

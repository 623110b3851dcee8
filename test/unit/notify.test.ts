/**
 * Notifications: which receiver wants which event, the payload each
 * receiver type documents (sent to a real local HTTP server), signatures,
 * bounded retries, secrets kept out, and one event per transition.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Notification } from '../../src/config/types.ts';
import { CHAT_SUBJECTS, deliver, wants, type NotifiedTrack } from '../../src/notify/deliver.ts';
import {
  boundedEvent,
  MAX_EVENT_JSON_BYTES,
  MAX_EVENT_MESSAGE_CHARS,
  type NotificationEvent,
} from '../../src/notify/events.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { eventsOf, newEvents } from '../../src/sync/job-events.ts';
import { noDriftFound } from '../../src/sync/reconcile-drift.ts';
import { runJob, type JobResult } from '../../src/sync/run-job.ts';
import { emptyTrackState, readTrackState, updateTrackState } from '../../src/sync/track-state.ts';

const SHA = 'a'.repeat(40);
const MARKER = 'hooks-secret-marker-7f3a';

interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** A local receiver answering each request with the next status of `statuses` (then 200). */
async function receiver(): Promise<{
  url: string;
  received: Received[];
  statuses: number[];
  close: () => Promise<void>;
}> {
  const received: Received[] = [];
  const statuses: number[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers, body });
      response.writeHead(statuses.shift() ?? 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    statuses,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const event = (over: Partial<NotificationEvent> = {}): NotificationEvent => ({
  track: 'prod-web',
  event: 'failed',
  revision: SHA,
  result: 'failed',
  message: 'ConfigMap/apps/x: admission webhook refused it',
  subjects: [],
  time: '2026-11-24T12:00:00.000Z',
  ...over,
});

/** The generic webhook's body, as docs/configuration.md documents it. */
const WEBHOOK_KEYS = ['track', 'event', 'revision', 'result', 'message', 'subjects', 'time'];

/** The track the events are about: on a host, waiting for health. */
const TRACK: NotifiedTrack = {
  name: 'prod-web',
  repository: 'https://github.com/acme/web.git',
  wait: true,
};

function receiversOf(yaml: string): Notification[] {
  return parseConfig(yaml, 'driftless.yaml').notifications;
}

describe('notification receivers', () => {
  let server: Awaited<ReturnType<typeof receiver>>;
  const secrets = new Map<string, string>();
  const readSecret = async (ref: SecretRef) => {
    const name = ref.scheme === 'env' ? ref.name : '';
    const value = secrets.get(name);
    if (value === undefined) throw new Error(`secret env:${name} is not set`);
    return value;
  };

  before(async () => {
    server = await receiver();
    secrets.set('HOOK_URL', `${server.url}/generic/${MARKER}`);
    secrets.set('SLACK_URL', `${server.url}/slack`);
    secrets.set('TEAMS_URL', `${server.url}/teams`);
    secrets.set('HOOK_KEY', 'signing-key');
  });
  after(() => server.close());

  const receivers = receiversOf(`notifications:
  - {name: oncall, type: slack, url: env:SLACK_URL, tracks: ["prod-*"], events: [failed, degraded]}
  - {name: teams, type: msteams, url: env:TEAMS_URL, events: [applied]}
  - {name: audit, type: webhook, url: env:HOOK_URL, secret: env:HOOK_KEY}
`);

  it('routes by track globs and event types', () => {
    const [oncall, teams, audit] = receivers;
    assert.equal(wants(oncall!, event()), true);
    assert.equal(wants(oncall!, event({ track: 'staging-web' })), false);
    assert.equal(wants(oncall!, event({ event: 'applied' })), false);
    assert.equal(wants(teams!, event({ event: 'applied', track: 'anything' })), true);
    assert.equal(wants(audit!, event({ event: 'writtenBack' })), true);
  });

  it('sends each receiver its documented payload; the generic one signed like our own webhooks', async () => {
    // Act
    server.received.length = 0;
    await deliver(receivers, TRACK, [event(), event({ event: 'applied', message: 'applied' })], {
      readSecret,
    });

    // Assess
    const byPath = (path: string) => server.received.filter((r) => r.path.startsWith(path));
    const slack = byPath('/slack');
    assert.equal(slack.length, 1);
    assert.deepEqual(JSON.parse(slack[0]!.body), {
      text: `*prod-web*: failed at ${SHA.slice(0, 12)}: ConfigMap/apps/x: admission webhook refused it`,
    });
    const teams = byPath('/teams');
    assert.equal(teams.length, 1);
    const card = JSON.parse(teams[0]!.body);
    assert.equal(card['@type'], 'MessageCard');
    assert.equal(card.title, `prod-web: applied at ${SHA.slice(0, 12)}`);
    const generic = byPath('/generic');
    assert.equal(generic.length, 2);
    for (const request of generic) {
      const expected = `sha256=${createHmac('sha256', 'signing-key').update(request.body).digest('hex')}`;
      assert.equal(request.headers['x-driftless-signature'], expected);
      assert.deepEqual(Object.keys(JSON.parse(request.body)), WEBHOOK_KEYS);
    }
    // The receiver URLs are secrets: no payload carries one.
    for (const request of server.received) assert.ok(!request.body.includes(MARKER));
  });

  it('retries a failing receiver once, gives up on a refusal at once, and never throws', async () => {
    const audit = receivers.filter((r) => r.name === 'audit');
    const failures: string[] = [];
    const onFailure = (name: string, _event: NotificationEvent, error: string) =>
      failures.push(`${name}: ${error}`);

    server.received.length = 0;
    server.statuses.push(503);
    await deliver(audit, TRACK, [event()], { readSecret, onFailure });
    assert.equal(server.received.length, 2, 'one retry after a 503');
    assert.deepEqual(failures, []);

    server.received.length = 0;
    server.statuses.push(503, 503);
    await deliver(audit, TRACK, [event()], { readSecret, onFailure });
    assert.equal(server.received.length, 2, 'two tries at most');
    assert.deepEqual(failures, ['audit: HTTP 503']);

    server.received.length = 0;
    server.statuses.push(400);
    await deliver(audit, TRACK, [event()], { readSecret, onFailure });
    assert.equal(server.received.length, 1, 'a refusal is not retried');

    // A receiver that never answers costs at most two short tries; the error names no URL.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    secrets.set('SILENT', `http://127.0.0.1:${(silent.address() as AddressInfo).port}/${MARKER}`);
    failures.length = 0;
    const started = performance.now();
    await deliver(
      receiversOf('notifications: [{name: silent, type: webhook, url: env:SILENT}]'),
      TRACK,
      [event()],
      { readSecret, onFailure, attemptTimeoutMs: 200 },
    );
    silent.closeAllConnections();
    silent.close();
    assert.ok(performance.now() - started < 2_000);
    assert.equal(failures.length, 1);
    // (deepEqual above narrowed the array's type; it is strings all the same.)
    const reported = String((failures as string[])[0]);
    assert.ok(!reported.includes(MARKER), reported);
  });

  it('tells a drift of thousands of objects within what each receiver takes, counting what it leaves out', async () => {
    // Prepare: 5,000 drifted objects (~300 KB of subjects) and a 60 KB first error.
    const subjects = Array.from(
      { length: 5_000 },
      (_, i) => `Deployment/team-${i % 40}/service-${String(i).padStart(5, '0')}`,
    );
    const big = event({
      event: 'drifted',
      result: 'drifted',
      message: 'x'.repeat(60_000),
      subjects,
    });
    const teamsReceiver = receiversOf(`notifications:
  - {name: all-teams, type: msteams, url: env:TEAMS_URL}
`);

    // Act
    server.received.length = 0;
    const failures: string[] = [];
    await deliver([...receivers, ...teamsReceiver], TRACK, [big], {
      readSecret,
      onFailure: (name, _event, error) => failures.push(`${name}: ${error}`),
    });

    // Assess
    assert.deepEqual(failures, []);
    const byPath = (path: string) => server.received.find((r) => r.path.startsWith(path))!;
    // The generic webhook: the documented JSON, its first subjects, and how many were left out.
    const generic = byPath('/generic');
    assert.ok(Buffer.byteLength(generic.body) <= MAX_EVENT_JSON_BYTES, `${generic.body.length}`);
    const sent = JSON.parse(generic.body) as NotificationEvent;
    assert.deepEqual(Object.keys(sent), [...WEBHOOK_KEYS, 'subjectsOmitted']);
    assert.ok(sent.subjects.length > 500, `${sent.subjects.length} subjects kept`);
    assert.deepEqual(sent.subjects, subjects.slice(0, sent.subjects.length));
    assert.equal(sent.subjectsOmitted, subjects.length - sent.subjects.length);
    assert.equal(sent.message.length, MAX_EVENT_MESSAGE_CHARS);
    assert.ok(sent.message.endsWith('…'));
    // Chat: the first CHAT_SUBJECTS subjects for people, then a count; Teams' ~28 KB limit kept.
    const card = JSON.parse(byPath('/teams').body) as { text: string };
    assert.ok(byPath('/teams').body.length < 28_000, `${byPath('/teams').body.length} bytes`);
    const lines = card.text.split('<br>');
    assert.deepEqual(lines.slice(1), [
      ...subjects.slice(0, CHAT_SUBJECTS).map((subject) => `• ${subject}`),
      `… and ${subjects.length - CHAT_SUBJECTS} more`,
    ]);
  });

  it('leaves a small event as it is, and keeps the count when an event is bounded again', () => {
    const small = event({ event: 'drifted', subjects: ['ConfigMap/apps/a', 'ConfigMap/apps/b'] });
    assert.equal(boundedEvent(small), small);
    const subjects = Array.from({ length: 200 }, (_, i) => `ConfigMap/apps/settings-${i}`);
    const once = boundedEvent(event({ subjects }), 2_000);
    assert.ok(Buffer.byteLength(JSON.stringify(once)) <= 2_000);
    assert.equal(once.subjects.length + once.subjectsOmitted!, 200);
    const twice = boundedEvent({ ...once, subjects: once.subjects.slice(0, 10) }, 1_000);
    assert.equal(
      twice.subjects.length + twice.subjectsOmitted!,
      200 - (once.subjects.length - 10),
      'subjects left out before are still counted',
    );
  });

  it('refuses unknown receiver types, fields of another type, and malformed AWS targets', () => {
    assert.throws(
      () => receiversOf('notifications: [{name: s, type: pager, url: env:X}]'),
      /notifications\[0\]\.type/,
    );
    assert.throws(
      () => receiversOf('notifications: [{name: s, type: slack, url: env:X, secret: env:Y}]'),
      /notifications\[0\]\.secret/,
    );
    assert.throws(
      () => receiversOf('notifications: [{name: s, type: sns, topicArn: my-topic}]'),
      /notifications\[0\]\.topicArn: "my-topic" is not an SNS topic ARN/,
    );
    assert.deepEqual(
      receiversOf(
        'notifications: [{name: s, type: sns, topicArn: "arn:aws:sns:eu-west-1:123456789012:deploys"}, {name: e, type: eventbridge}]',
      ).map((r) => [r.type, 'topicArn' in r ? r.topicArn : 'eventBus' in r ? r.eventBus : '']),
      [
        ['sns', 'arn:aws:sns:eu-west-1:123456789012:deploys'],
        ['eventbridge', 'default'],
      ],
    );
  });
});

describe('notification events', () => {
  let dir: string;
  let store: FsStore;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-notify-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const syncResult = (result: 'applied' | 'failed' | 'unchanged', error?: string): JobResult => ({
    type: 'sync',
    job: { type: 'sync', track: 'web', revision: SHA, resolvedAt: '', trigger: 'webhook' },
    result: {
      track: 'web',
      revision: SHA,
      result,
      changeset: [],
      state: emptyTrackState(),
      ...(error === undefined ? {} : { error }),
    },
    next: [],
  });

  it('tells a transition once: a repeated failure is quiet until something changes', async () => {
    const tell = async (done: JobResult) =>
      (await newEvents(store, 'web', done, 'now')).map((e) => e.event);
    assert.deepEqual(await tell(syncResult('failed', 'boom')), ['failed']);
    assert.deepEqual(await tell(syncResult('failed', 'boom')), []);
    assert.deepEqual(await tell(syncResult('failed', 'other error')), ['failed']);
    assert.deepEqual(await tell(syncResult('applied')), ['applied']);
    assert.deepEqual(await tell(syncResult('failed', 'boom')), ['failed']);
  });

  it('tells a suspend, but not one that found the track suspended already', () => {
    const suspend = (unchanged: boolean): JobResult => ({
      type: 'lifecycle',
      job: { type: 'lifecycle', track: 'web', action: 'suspend' },
      result: {
        track: 'web',
        action: 'suspend',
        result: 'suspended',
        revision: SHA,
        suspended: true,
        changeset: [],
        ...(unchanged ? { unchanged: true as const } : {}),
      },
      next: [],
    });
    assert.deepEqual(
      eventsOf('web', suspend(false), 'now').map((e) => e.event),
      ['suspended'],
    );
    assert.deepEqual(eventsOf('web', suspend(true), 'now'), []);
  });

  it('keeps a digest of the last event of each kind, not its subjects, and reads a state written before', async () => {
    // Prepare: a drift of 5,000 objects, told once.
    const subjects = Array.from({ length: 5_000 }, (_, i) => `ConfigMap/apps/settings-${i}`);
    const drifted = (track: string): JobResult => ({
      type: 'drift',
      job: { type: 'drift', track },
      result: {
        ...noDriftFound(track, SHA),
        missing: subjects,
      },
      next: [],
    });
    assert.equal((await newEvents(store, 'big', drifted('big'), 'now')).length, 1);

    // Act
    const kept = (await readTrackState(store, 'big')).notified ?? {};
    // A state written before the digest: the same drift, remembered as its JSON.
    await updateTrackState(store, 'legacy', (state) => {
      state.notified = {
        drift: JSON.stringify(['drifted', SHA, 'changed in the cluster', subjects]),
      };
    });

    // Assess
    assert.match(kept.drift ?? '', /^[0-9a-f]{64}$/);
    assert.deepEqual(
      await newEvents(store, 'big', drifted('big'), 'now'),
      [],
      'the same drift, not told again',
    );
    assert.deepEqual(
      await newEvents(store, 'legacy', drifted('legacy'), 'now'),
      [],
      'not told again after an upgrade either',
    );
    assert.match((await readTrackState(store, 'legacy')).notified?.drift ?? '', /^[0-9a-f]{64}$/);
  });

  it('are sent by runJob after the job, through the notify port', async () => {
    const sent: NotificationEvent[] = [];
    const track = parseConfig(
      'tracks: [{name: api, repository: https://git.example.com/o/api.git}]',
      'driftless.yaml',
    ).tracks[0]!;
    const deps = {
      tracks: [track],
      artifacts: store,
      state: store,
      queue: { enqueue: async () => undefined },
      notify: async (_track: NotifiedTrack, events: readonly NotificationEvent[]) =>
        void sent.push(...events),
    };
    const failing = async (): Promise<JobResult> =>
      ({
        ...syncResult('failed', 'refused'),
        result: { ...(syncResult('failed', 'refused').result as object), track: 'api' },
      }) as JobResult;
    const job = {
      type: 'sync',
      track: 'api',
      revision: SHA,
      resolvedAt: '',
      trigger: 'webhook',
    } as const;
    await runJob(job, deps, failing);
    await runJob(job, deps, failing);
    assert.deepEqual(
      sent.map((e) => [e.track, e.event, e.message]),
      [['api', 'failed', 'refused']],
    );
  });
});

/**
 * What a webhook request costs the webhook function before it is trusted:
 * the endpoint is public, so a request that is unsigned, wrongly signed or
 * for a host not configured reads the signing secrets (needed to check it)
 * and makes no request of the store (S3 in AWS) at all. The function's own
 * ports (src/aws/function-deps.ts webhookPorts) over a store that counts
 * every call, behind the real handler and use-case.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createWebhookHandler } from '../../handlers/webhook.ts';
import { webhookPorts } from '../../src/aws/function-deps.ts';
import { silentMetrics } from '../../src/aws/function-metrics.ts';
import type { HttpApiEvent } from '../../src/aws/lambda-events.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { Track } from '../../src/config/types.ts';
import { silentLogger } from '../../src/logger.ts';
import type { DeliveryLog, PublishedTrackStore } from '../../src/store/ports.ts';
import type { Job } from '../../src/sync/jobs.ts';
import type { PublishedTracks } from '../../src/sync/published-tracks.ts';

const SECRET = 'It is a secret to everybody';
const PUSH = readFileSync('test/fixtures/webhooks/github-push.json', 'utf8');
const PUSH_HEADERS = { 'x-github-event': 'push', 'x-github-delivery': 'delivery-1' };

/** A config whose tracks are partly published at run time: matching a push reads the store. */
const CONFIG = parseConfig(
  `
webhooks:
  github: {secret: env:GITHUB_WEBHOOK_SECRET}
tracksFrom:
  - repository: https://git.example.com/platform/tracks.git
    reference: main
tracks:
  - name: web
    repository: https://github.com/octo-org/manifests
    reference: main
`,
  'driftless.yaml',
);
const SOURCE = CONFIG.tracksFrom[0]!.id;

/** The published list of the source: one more track of the pushed repository. */
const PUBLISHED: PublishedTracks = {
  source: SOURCE,
  publishedAt: '2025-01-01T00:00:00.000Z',
  tracks: [{ ...CONFIG.tracks[0]!, name: 'docs' } as Track],
  problems: [],
};

/** Our store's ports the webhook has (published tracks, delivery log), noting every call. */
function countingStore(): {
  calls: string[];
  published: PublishedTrackStore;
  deliveries: DeliveryLog;
} {
  const calls: string[] = [];
  const marked = new Set<string>();
  return {
    calls,
    published: {
      publish: async (source) => void calls.push(`publish ${source}`),
      readPublished: async <T>(source: string) => {
        calls.push(`readPublished ${source}`);
        return (source === SOURCE ? PUBLISHED : undefined) as T | undefined;
      },
    },
    deliveries: {
      isDelivered: async (id) => {
        calls.push(`isDelivered ${id}`);
        return marked.has(id);
      },
      markDelivery: async (id) => {
        calls.push(`markDelivery ${id}`);
        if (marked.has(id)) return false;
        marked.add(id);
        return true;
      },
    },
  };
}

function fixture() {
  const store = countingStore();
  const jobs: Job[] = [];
  const secretReads: string[] = [];
  const handler = createWebhookHandler(
    async () =>
      webhookPorts(CONFIG, store, { enqueue: async (job) => void jobs.push(job) }, async (ref) => {
        secretReads.push(ref.scheme);
        return SECRET;
      }),
    silentLogger,
    silentMetrics,
  );
  return { handler, calls: store.calls, jobs, secretReads };
}

function githubEvent(
  signedWith: string | undefined,
  provider = 'github',
  headers: Record<string, string> = PUSH_HEADERS,
): HttpApiEvent {
  const signature =
    signedWith === undefined
      ? {}
      : {
          'x-hub-signature-256': `sha256=${createHmac('sha256', signedWith).update(PUSH).digest('hex')}`,
        };
  return {
    pathParameters: { provider },
    headers: { 'content-type': 'application/json', ...signature, ...headers },
    body: Buffer.from(PUSH).toString('base64'),
    isBase64Encoded: true,
  };
}

describe('the webhook function before a request is trusted', () => {
  it('makes no store request for a wrong signature: it reads the secret, and answers 401', async () => {
    // Prepare
    const { handler, calls, jobs, secretReads } = fixture();

    // Act
    const result = await handler(githubEvent('not the secret'));

    // Assess
    assert.equal(result.statusCode, 401, result.body);
    assert.deepEqual(calls, []);
    assert.deepEqual(jobs, []);
    assert.equal(secretReads.length, 1);
  });

  it('makes no store request for an unsigned request, nor for a host that is not configured', async () => {
    // Prepare
    const { handler, calls, jobs } = fixture();

    // Act
    const unsigned = await handler(githubEvent(undefined));
    const gitlab = await handler(githubEvent(SECRET, 'gitlab'));
    const unknown = await handler(githubEvent(SECRET, 'nowhere'));

    // Assess
    assert.deepEqual([unsigned.statusCode, gitlab.statusCode, unknown.statusCode], [401, 404, 404]);
    assert.deepEqual(calls, []);
    assert.deepEqual(jobs, []);
  });

  it('reads the store for a verified push: the delivery log, then the published tracks', async () => {
    // Prepare
    const { handler, calls, jobs } = fixture();

    // Act
    const first = await handler(githubEvent(SECRET));
    const again = await handler(githubEvent(SECRET));

    // Assess: the published track is matched too; a redelivery reads the log alone.
    assert.equal(first.statusCode, 202, first.body);
    assert.deepEqual(JSON.parse(first.body).tracks, ['web', 'docs']);
    assert.equal(JSON.parse(again.body).kind, 'duplicate');
    assert.deepEqual(
      jobs.map((job) => job.track),
      ['web', 'docs'],
    );
    assert.deepEqual(calls, [
      'isDelivered github:delivery-1',
      `readPublished ${SOURCE}`,
      'markDelivery github:delivery-1',
      'isDelivered github:delivery-1',
    ]);
  });
});

describe('delivery ids', () => {
  it('are told apart by host: an id GitHub sent does not make a Gitea delivery a repeat', async () => {
    // Prepare: GitHub and Gitea both configured, each signing with its own secret.
    const config = parseConfig(
      `
webhooks:
  github: {secret: env:GITHUB_WEBHOOK_SECRET}
  gitea: {secret: env:GITEA_WEBHOOK_SECRET}
tracks:
  - name: web
    repository: https://github.com/octo-org/manifests
    reference: main
`,
      'driftless.yaml',
    );
    const store = countingStore();
    const jobs: Job[] = [];
    const handler = createWebhookHandler(
      async () =>
        webhookPorts(
          config,
          store,
          { enqueue: async (job) => void jobs.push(job) },
          async () => SECRET,
        ),
      silentLogger,
      silentMetrics,
    );
    const gitea = (): HttpApiEvent => ({
      pathParameters: { provider: 'gitea' },
      headers: {
        'content-type': 'application/json',
        'x-gitea-event': 'push',
        'x-gitea-delivery': 'delivery-1',
        'x-gitea-signature': createHmac('sha256', SECRET).update(PUSH).digest('hex'),
      },
      body: Buffer.from(PUSH).toString('base64'),
      isBase64Encoded: true,
    });

    // Act: the same id from both hosts, then each host's redelivery.
    const answers = [
      await handler(githubEvent(SECRET)),
      await handler(gitea()),
      await handler(githubEvent(SECRET)),
      await handler(gitea()),
    ].map((result) => `${result.statusCode} ${JSON.parse(result.body).kind}`);

    // Assess
    assert.deepEqual(answers, ['202 push', '202 push', '202 duplicate', '202 duplicate']);
    assert.equal(jobs.length, 2);
  });
});

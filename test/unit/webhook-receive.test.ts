import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { WebhookHost } from '../../src/config/types.ts';
import { receiveWebhook, type WebhookRequest } from '../../src/source/webhooks/index.ts';

const SECRET = 'It is a secret to everybody';
const OLD_SECRET = 'the secret being rotated out';

function fixture(name: string): string {
  return readFileSync(`test/fixtures/webhooks/${name}`, 'utf8');
}

function hmacHex(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** What differs between hosts, so every host runs the same checks. */
interface HostCase {
  readonly host: WebhookHost;
  readonly pushBody: string;
  /** Headers naming a push; the delivery id header included. */
  readonly pushHeaders: Record<string, string>;
  readonly deliveryId: string;
  /** Headers naming an event that is not a push. */
  readonly otherEvent: Record<string, string>;
  /** Headers naming a ping, for hosts that have one. */
  readonly ping?: Record<string, string>;
  /** Signature headers of `body` under `secret`. */
  sign(body: string, secret: string): Record<string, string>;
  readonly expected: { ref: string; after: string; before?: string; urls: string[] };
  /** The push body with the pushed ref deleted. */
  deletion(body: string): string;
}

const ZERO = '0'.repeat(40);

const HOSTS: readonly HostCase[] = [
  {
    host: 'github',
    pushBody: fixture('github-push.json'),
    pushHeaders: {
      'x-github-event': 'push',
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'content-type': 'application/json',
    },
    deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
    otherEvent: { 'x-github-event': 'issues' },
    ping: { 'x-github-event': 'ping' },
    sign: (body, secret) => ({ 'x-hub-signature-256': `sha256=${hmacHex(secret, body)}` }),
    expected: {
      ref: 'refs/heads/main',
      after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
      before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
      urls: [
        'https://github.com/Octo-Org/Manifests.git',
        'git@github.com:Octo-Org/Manifests.git',
        'https://github.com/Octo-Org/Manifests',
        'git://github.com/Octo-Org/Manifests.git',
      ],
    },
    deletion: (body) =>
      JSON.stringify({ ...JSON.parse(body), ref: 'refs/tags/v1.0.0', after: ZERO, deleted: true }),
  },
  {
    host: 'gitlab',
    pushBody: fixture('gitlab-push.json'),
    pushHeaders: {
      'x-gitlab-event': 'Push Hook',
      'idempotency-key': 'f1d2a3b4-0000-4c5d-8e9f-a0b1c2d3e4f5',
      'x-gitlab-event-uuid': '13792a34-cac6-4fda-95a8-c58e00a3954e',
    },
    deliveryId: 'f1d2a3b4-0000-4c5d-8e9f-a0b1c2d3e4f5',
    otherEvent: { 'x-gitlab-event': 'Merge Request Hook' },
    sign: (_body, secret) => ({ 'x-gitlab-token': secret }),
    expected: {
      ref: 'refs/heads/main',
      after: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
      before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
      urls: [
        'https://gitlab.example.com/platform/deploy/manifests.git',
        'git@gitlab.example.com:platform/deploy/manifests.git',
        'https://gitlab.example.com/platform/deploy/manifests',
      ],
    },
    deletion: (body) =>
      JSON.stringify({
        ...JSON.parse(body),
        object_kind: 'tag_push',
        ref: 'refs/tags/v1.0.0',
        after: ZERO,
      }),
  },
  {
    host: 'gitea',
    pushBody: fixture('gitea-push.json'),
    pushHeaders: {
      'x-gitea-event': 'push',
      'x-gitea-delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
    },
    deliveryId: 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
    otherEvent: { 'x-gitea-event': 'issues' },
    sign: (body, secret) => ({ 'x-gitea-signature': hmacHex(secret, body) }),
    expected: {
      ref: 'refs/heads/main',
      after: 'bffeb74224043ba2feb48d137756c8a9331c449a',
      before: '28e1879d029cb852e4844d9c718537df08844e03',
      urls: [
        'https://gitea.example.com/org/manifests.git',
        'ssh://git@gitea.example.com:2222/org/manifests.git',
        'https://gitea.example.com/org/manifests',
      ],
    },
    deletion: (body) =>
      JSON.stringify({ ...JSON.parse(body), ref: 'refs/tags/v1.0.0', after: ZERO }),
  },
  {
    host: 'bitbucket',
    pushBody: fixture('bitbucket-push.json'),
    pushHeaders: {
      'x-event-key': 'repo:push',
      'x-request-uuid': 'afe6e4c2-4c3b-4a8f-9b1e-0d2c7a1f5e3b',
      'x-hook-uuid': 'cb3d2fa5-6e4f-4b0c-9a1d-2e3f4a5b6c7d',
    },
    deliveryId: 'afe6e4c2-4c3b-4a8f-9b1e-0d2c7a1f5e3b',
    otherEvent: { 'x-event-key': 'pullrequest:created' },
    ping: { 'x-event-key': 'diagnostics:ping' },
    sign: (body, secret) => ({ 'x-hub-signature': `sha256=${hmacHex(secret, body)}` }),
    expected: {
      ref: 'refs/heads/main',
      after: '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432',
      before: '4b7d5e1a7c3f2b6d9e0a1c2b3d4e5f6a7b8c9d0e',
      urls: ['https://bitbucket.org/acme/manifests'],
    },
    deletion: (body) => {
      const payload = JSON.parse(body);
      const old = { ...payload.push.changes[1].new, name: 'v1.0.0' };
      payload.push.changes = [{ old, new: null, created: false, closed: true }];
      return JSON.stringify(payload);
    },
  },
  {
    host: 'generic',
    pushBody: JSON.stringify({
      repository: 'https://git.example.com/org/manifests.git',
      ref: 'refs/heads/main',
      after: '2f7c9e1b3a5d4c6e8f0a1b2c3d4e5f6a7b8c9d0e',
      before: '1e6b8d0a2c4e6f8a0b2c4d6e8f0a2b4c6d8e0f1a',
    }),
    pushHeaders: { 'x-driftless-delivery': 'ci-run-4711' },
    deliveryId: 'ci-run-4711',
    otherEvent: { 'x-driftless-event': 'build' },
    ping: { 'x-driftless-event': 'ping' },
    sign: (body, secret) => ({ 'x-driftless-signature': `sha256=${hmacHex(secret, body)}` }),
    expected: {
      ref: 'refs/heads/main',
      after: '2f7c9e1b3a5d4c6e8f0a1b2c3d4e5f6a7b8c9d0e',
      before: '1e6b8d0a2c4e6f8a0b2c4d6e8f0a2b4c6d8e0f1a',
      urls: ['https://git.example.com/org/manifests.git'],
    },
    deletion: (body) =>
      JSON.stringify({ ...JSON.parse(body), ref: 'refs/tags/v1.0.0', after: ZERO }),
  },
];

/** A delivery of `body` with `headers`, signed by `secret` unless it is null. */
function request(
  host: HostCase,
  body: string,
  headers: Record<string, string>,
  secret: string | null = SECRET,
): WebhookRequest {
  return {
    headers: { ...headers, ...(secret === null ? {} : host.sign(body, secret)) },
    body,
  };
}

for (const host of HOSTS) {
  describe(`receiveWebhook (${host.host})`, () => {
    it('accepts a push signed with the secret', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.kind, 'push');
      assert.equal(outcome.deliveryId, host.deliveryId);
      assert.equal(outcome.events?.[0], outcome.event);
      assert.equal(outcome.event?.host, host.host);
      assert.equal(outcome.event?.ref, host.expected.ref);
      assert.equal(outcome.event?.after, host.expected.after);
      assert.equal(outcome.event?.before, host.expected.before);
      assert.equal(outcome.event?.deliveryId, host.deliveryId);
      assert.deepEqual(outcome.event?.repositoryUrls, host.expected.urls);
    });

    it('accepts a push signed with any configured secret (rotation)', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders, SECRET);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [OLD_SECRET, SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.kind, 'push');
    });

    it('rejects a wrong signature with 401', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders, 'not the secret');

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET, OLD_SECRET]);

      // Assess
      assert.equal(outcome.status, 401);
      assert.equal(outcome.kind, 'rejected');
      assert.equal(outcome.code, 'WEBHOOK_SIGNATURE');
      assert.equal(outcome.event, undefined);
      assert.equal(outcome.deliveryId, undefined);
      assert.doesNotMatch(outcome.reason, /secret to everybody/);
    });

    it('rejects a missing signature with 401', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders, null);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 401);
      assert.match(outcome.reason, /^missing /);
    });

    it('rejects a signed push when no secret is configured', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders, '');

      // Act
      const outcome = await receiveWebhook(host.host, delivery, ['']);

      // Assess
      assert.equal(outcome.status, 401);
      assert.match(outcome.reason, /no webhook secret/);
    });

    it('rejects a wrong signature before parsing the body', async (t) => {
      // Prepare
      const delivery = request(host, '{not json', host.pushHeaders, 'not the secret');
      const parse = t.mock.method(JSON, 'parse');

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 401);
      assert.equal(parse.mock.callCount(), 0);
    });

    it('answers 400 for a signed body that is not JSON', async (t) => {
      // Prepare
      const delivery = request(host, '{not json', host.pushHeaders);
      const parse = t.mock.method(JSON, 'parse');

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(
        parse.mock.callCount(),
        1,
        'the spy sees parsing (so its silence above means something)',
      );
      assert.equal(outcome.status, 400);
      assert.equal(outcome.code, 'WEBHOOK_PAYLOAD_INVALID');
      assert.match(outcome.reason, /not valid JSON/);
      assert.equal(outcome.deliveryId, host.deliveryId);
    });

    it('says where a signed body stops being JSON, never quoting it', async () => {
      // Prepare
      const cases: [string, RegExp][] = [
        ['nope PLANTED', /at position 1\b/],
        ['{"ref": PLANTED}', /at position 8\b/],
        ['{"ref": "PLANTED"', /ends before/],
      ];

      for (const [body, where] of cases) {
        // Act
        const outcome = await receiveWebhook(host.host, request(host, body, host.pushHeaders), [
          SECRET,
        ]);

        // Assess
        assert.equal(outcome.status, 400, body);
        assert.match(outcome.reason, /^body is not valid JSON/, body);
        assert.match(outcome.reason, where, body);
        assert.doesNotMatch(outcome.reason, /PLANTED|nope/, body);
      }
    });

    it('verifies a base64-encoded body over its decoded bytes', async () => {
      // Prepare
      const signed = request(host, host.pushBody, host.pushHeaders);
      const delivery: WebhookRequest = {
        ...signed,
        body: Buffer.from(host.pushBody, 'utf8').toString('base64'),
        isBase64Encoded: true,
      };

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.event?.after, host.expected.after);
    });

    it('ignores an event that is not a push with 202 and a reason', async () => {
      // Prepare
      const delivery = request(host, '{}', host.otherEvent);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.kind, 'ignored');
      assert.match(outcome.reason, /is not a push/);
      assert.equal(outcome.event, undefined);
    });

    it('ignores the deletion of a ref with 202', async () => {
      // Prepare
      const delivery = request(host, host.deletion(host.pushBody), host.pushHeaders);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.kind, 'ignored');
      assert.equal(outcome.reason, 'tag deletion of refs/tags/v1.0.0');
    });

    it('refuses a body over the size limit with 413, even when signed', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders);
      const maxBytes = Buffer.byteLength(host.pushBody) - 1;

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET], { maxBytes });

      // Assess
      assert.equal(outcome.status, 413);
      assert.equal(outcome.code, 'WEBHOOK_TOO_LARGE');
    });

    it('accepts a body of exactly the size limit', async () => {
      // Prepare
      const delivery = request(host, host.pushBody, host.pushHeaders);
      const maxBytes = Buffer.byteLength(host.pushBody);

      // Act
      const outcome = await receiveWebhook(host.host, delivery, [SECRET], { maxBytes });

      // Assess
      assert.equal(outcome.status, 202);
    });

    it('derives a stable delivery id from the body when the host sends none', async () => {
      // Prepare
      const headers = Object.fromEntries(
        Object.entries(host.pushHeaders).filter(
          ([name]) => !/delivery|uuid|idempotency|request/.test(name),
        ),
      );
      const delivery = request(host, host.pushBody, headers);

      // Act
      const first = await receiveWebhook(host.host, delivery, [SECRET]);
      const second = await receiveWebhook(host.host, delivery, [SECRET]);

      // Assess
      assert.match(first.deliveryId ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.equal(second.deliveryId, first.deliveryId);
      assert.equal(first.event?.deliveryId, first.deliveryId);
    });

    it('reads header names in any case', async () => {
      // Prepare
      const signed = request(host, host.pushBody, host.pushHeaders);
      const headers = Object.fromEntries(
        Object.entries(signed.headers).map(([name, value]) => [name.toUpperCase(), value]),
      );

      // Act
      const outcome = await receiveWebhook(host.host, { ...signed, headers }, [SECRET]);

      // Assess
      assert.equal(outcome.status, 202);
      assert.equal(outcome.deliveryId, host.deliveryId);
    });

    if (host.ping !== undefined) {
      const ping = host.ping;
      it('answers a ping with 200', async () => {
        // Prepare
        const body = host.host === 'github' ? fixture('github-ping.json') : '{}';
        const delivery = request(host, body, ping);

        // Act
        const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

        // Assess
        assert.equal(outcome.status, 200);
        assert.equal(outcome.kind, 'ping');
      });

      it('rejects an unsigned ping with 401', async () => {
        // Prepare
        const delivery = request(host, '{}', ping, null);

        // Act
        const outcome = await receiveWebhook(host.host, delivery, [SECRET]);

        // Assess
        assert.equal(outcome.status, 401);
      });
    }
  });
}

describe('receiveWebhook (host specifics)', () => {
  it('verifies a GitHub form-encoded delivery over the form and reads its payload field', async () => {
    // Prepare
    const body = `payload=${encodeURIComponent(fixture('github-push.json'))}`;
    const delivery: WebhookRequest = {
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'd1',
        'content-type': 'application/x-www-form-urlencoded',
        'x-hub-signature-256': `sha256=${hmacHex(SECRET, body)}`,
      },
      body,
    };

    // Act
    const outcome = await receiveWebhook('github', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 202);
    assert.equal(outcome.event?.defaultBranch, 'main');
  });

  it('says where a form-encoded payload field stops being JSON, never quoting it', async () => {
    // Prepare
    const body = `payload=${encodeURIComponent('{"ref": PLANTED}')}`;
    const delivery: WebhookRequest = {
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'd2',
        'content-type': 'application/x-www-form-urlencoded',
        'x-hub-signature-256': `sha256=${hmacHex(SECRET, body)}`,
      },
      body,
    };

    // Act
    const outcome = await receiveWebhook('github', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 400);
    assert.match(outcome.reason, /^the payload field is not valid JSON: .* at position 8\b/);
    assert.doesNotMatch(outcome.reason, /PLANTED/);
  });

  it('rejects a GitHub SHA-1 signature alone', async () => {
    // Prepare
    const body = fixture('github-push.json');
    const sha1 = createHmac('sha1', SECRET).update(body).digest('hex');
    const delivery: WebhookRequest = {
      headers: { 'x-github-event': 'push', 'x-hub-signature': `sha1=${sha1}` },
      body,
    };

    // Act
    const outcome = await receiveWebhook('github', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 401);
    assert.equal(outcome.reason, 'missing X-Hub-Signature-256 header');
  });

  it('answers 400 for a signed GitHub delivery without an event header', async () => {
    // Prepare
    const body = fixture('github-push.json');
    const delivery: WebhookRequest = {
      headers: { 'x-hub-signature-256': `sha256=${hmacHex(SECRET, body)}` },
      body,
    };

    // Act
    const outcome = await receiveWebhook('github', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 400);
    assert.equal(outcome.reason, 'missing X-GitHub-Event header');
  });

  it('rejects a body changed after signing', async () => {
    // Prepare
    const body = fixture('github-push.json');
    const delivery: WebhookRequest = {
      headers: {
        'x-github-event': 'push',
        'x-hub-signature-256': `sha256=${hmacHex(SECRET, body)}`,
      },
      body: body.replace('refs/heads/main', 'refs/heads/evil'),
    };

    // Act
    const outcome = await receiveWebhook('github', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 401);
  });

  it('accepts a GitLab tag push and a push through a system hook', async () => {
    // Prepare
    const push = JSON.parse(fixture('gitlab-push.json'));
    const tag = JSON.stringify({
      ...push,
      object_kind: 'tag_push',
      event_name: 'tag_push',
      ref: 'refs/tags/v1.2.0',
    });
    const system = fixture('gitlab-push.json');

    // Act
    const tagOutcome = await receiveWebhook(
      'gitlab',
      { headers: { 'x-gitlab-event': 'Tag Push Hook', 'x-gitlab-token': SECRET }, body: tag },
      [SECRET],
    );
    const systemOutcome = await receiveWebhook(
      'gitlab',
      { headers: { 'x-gitlab-event': 'System Hook', 'x-gitlab-token': SECRET }, body: system },
      [SECRET],
    );

    // Assess
    assert.equal(tagOutcome.event?.ref, 'refs/tags/v1.2.0');
    assert.equal(systemOutcome.kind, 'push');
    assert.equal(systemOutcome.event?.defaultBranch, 'main');
  });

  it('falls back to X-Gitlab-Event-UUID for the GitLab delivery id', async () => {
    // Prepare
    const delivery: WebhookRequest = {
      headers: {
        'x-gitlab-event': 'Push Hook',
        'x-gitlab-token': SECRET,
        'x-gitlab-event-uuid': '13792a34-cac6-4fda-95a8-c58e00a3954e',
      },
      body: fixture('gitlab-push.json'),
    };

    // Act
    const outcome = await receiveWebhook('gitlab', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.deliveryId, '13792a34-cac6-4fda-95a8-c58e00a3954e');
  });

  it('ignores a GitLab system hook that is not a push', async () => {
    // Prepare
    const delivery: WebhookRequest = {
      headers: { 'x-gitlab-event': 'System Hook', 'x-gitlab-token': SECRET },
      body: JSON.stringify({ event_name: 'project_create', name: 'x' }),
    };

    // Act
    const outcome = await receiveWebhook('gitlab', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 202);
    assert.equal(outcome.kind, 'ignored');
  });

  it('accepts Forgejo headers', async () => {
    // Prepare
    const body = fixture('gitea-push.json');
    const delivery: WebhookRequest = {
      headers: {
        'x-forgejo-event': 'push',
        'x-forgejo-delivery': 'fj-1',
        'x-forgejo-signature': hmacHex(SECRET, body),
      },
      body,
    };

    // Act
    const outcome = await receiveWebhook('gitea', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.status, 202);
    assert.equal(outcome.deliveryId, 'fj-1');
  });

  it('returns one event per ref of a Bitbucket push', async () => {
    // Prepare
    const body = fixture('bitbucket-push.json');
    const delivery: WebhookRequest = {
      headers: { 'x-event-key': 'repo:push', 'x-hub-signature': `sha256=${hmacHex(SECRET, body)}` },
      body,
    };

    // Act
    const outcome = await receiveWebhook('bitbucket', delivery, [SECRET]);

    // Assess
    assert.deepEqual(
      outcome.events?.map((event) => [event.ref, event.after, event.before]),
      [
        [
          'refs/heads/main',
          '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432',
          '4b7d5e1a7c3f2b6d9e0a1c2b3d4e5f6a7b8c9d0e',
        ],
        ['refs/tags/v1.4.0', '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432', undefined],
      ],
    );
    assert.equal(outcome.reason, 'push to refs/heads/main, refs/tags/v1.4.0');
  });

  it('accepts a Bitbucket Data Center refs_changed push and uses X-Request-Id', async () => {
    // Prepare
    const body = fixture('bitbucket-server-refs-changed.json');
    const delivery: WebhookRequest = {
      headers: {
        'x-event-key': 'repo:refs_changed',
        'x-request-id': '8fdcbd1b-2a4e-4a0e-9a0f-6b1c1f7a2d3e',
        'x-hub-signature': `sha256=${hmacHex(SECRET, body)}`,
      },
      body,
    };

    // Act
    const outcome = await receiveWebhook('bitbucket', delivery, [SECRET]);

    // Assess
    assert.equal(outcome.deliveryId, '8fdcbd1b-2a4e-4a0e-9a0f-6b1c1f7a2d3e');
    assert.equal(outcome.event?.ref, 'refs/heads/main');
    assert.equal(outcome.event?.after, '178864a7d521b6f5e720b386b2c2b0ef8563e0dc');
    assert.deepEqual(outcome.event?.repositoryUrls, [
      'ssh://git@bitbucket.example.com:7999/ops/manifests.git',
      'https://bitbucket.example.com/scm/ops/manifests.git',
    ]);
  });

  it('answers 400 for a generic push with a short ref or no sha', async () => {
    // Prepare
    const bodies = [
      JSON.stringify({
        repository: 'https://git.example.com/o/r',
        ref: 'main',
        after: 'a'.repeat(40),
      }),
      JSON.stringify({ repository: 'https://git.example.com/o/r', ref: 'refs/heads/main' }),
      JSON.stringify({ ref: 'refs/heads/main', after: 'a'.repeat(40) }),
    ];

    // Act
    const outcomes = await Promise.all(
      bodies.map((body) =>
        receiveWebhook(
          'generic',
          { headers: { 'x-driftless-signature': `sha256=${hmacHex(SECRET, body)}` }, body },
          [SECRET],
        ),
      ),
    );

    // Assess
    assert.deepEqual(
      outcomes.map((outcome) => [outcome.status, outcome.reason]),
      [
        [400, 'ref "main" is not a full ref name (refs/heads/... or refs/tags/...)'],
        [400, 'payload has no string field after'],
        [400, 'payload has no string field repository'],
      ],
    );
  });

  it('ignores a push to a ref that is neither a branch nor a tag', async () => {
    // Prepare
    const body = JSON.stringify({
      repository: 'https://git.example.com/o/r',
      ref: 'refs/pull/7/head',
      after: 'b'.repeat(40),
    });

    // Act
    const outcome = await receiveWebhook(
      'generic',
      { headers: { 'x-driftless-signature': `sha256=${hmacHex(SECRET, body)}` }, body },
      [SECRET],
    );

    // Assess
    assert.equal(outcome.status, 202);
    assert.equal(outcome.reason, 'push to refs/pull/7/head, neither a branch nor a tag');
  });

  it('measures a base64 body after decoding it', async () => {
    // Prepare
    const body = JSON.stringify({
      repository: 'https://git.example.com/o/r',
      ref: 'refs/heads/main',
      after: 'c'.repeat(40),
    });
    const encoded = Buffer.from(body).toString('base64');
    const signature = `sha256=${hmacHex(SECRET, body)}`;
    const delivery = (maxBytes: number) =>
      receiveWebhook(
        'generic',
        { headers: { 'x-driftless-signature': signature }, body: encoded, isBase64Encoded: true },
        [SECRET],
        { maxBytes },
      );

    // Act
    const fits = await delivery(body.length);
    const over = await delivery(body.length - 1);

    // Assess
    assert.equal(fits.status, 202);
    assert.equal(over.status, 413);
  });

  it('uses a 1 MiB limit by default', async () => {
    // Prepare
    const body = JSON.stringify({ padding: 'x'.repeat(1024 * 1024) });

    // Act
    const outcome = await receiveWebhook(
      'generic',
      { headers: { 'x-driftless-signature': `sha256=${hmacHex(SECRET, body)}` }, body },
      [SECRET],
    );

    // Assess
    assert.equal(outcome.status, 413);
  });
});

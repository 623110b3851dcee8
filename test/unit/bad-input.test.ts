/**
 * Bad input that needs no cluster, through the real code paths: config files
 * read by the `driftless` command (runCli -> loadConfig) next to a store that
 * already holds a track's state, and webhook deliveries accepted by the
 * webhook use-case (acceptWebhook) with the real filesystem delivery log.
 *
 * Each case checks that the answer names the file, field or header at fault,
 * and that nothing already there moved: the store is byte-for-byte what it
 * was, no job was queued, and no delivery was marked — so the host's next,
 * correct delivery of the same id still goes through.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { parseConfig } from '../../src/config/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { acceptWebhook, type AcceptWebhookDeps } from '../../src/sync/accept-webhook.ts';
import type { Job } from '../../src/sync/jobs.ts';
import type { WebhookRequest } from '../../src/source/webhooks/index.ts';

/** Every file under `dir` with its content: what "nothing changed" is checked against. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files[path.slice(dir.length)] = await readFile(path, 'utf8');
  }
  return files;
}

// ---------------------------------------------------------------------------
// Config files
// ---------------------------------------------------------------------------

/** A valid config whose `{{store}}` is replaced with the test's store directory. */
const GOOD_CONFIG = `store: {type: fs, path: "{{store}}"}
webhooks:
  github: {secret: env:GITHUB_SECRET}
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
    interval: 5m
`;

interface ConfigCase {
  readonly name: string;
  /** The file's text (`{{store}}` replaced), or a path to use instead of a file. */
  readonly text?: string | Uint8Array;
  readonly path?: (dir: string) => string;
  /** What stderr says: the file, line or field at fault. */
  readonly error: RegExp;
}

const withTrack = (lines: string): string => `${GOOD_CONFIG}${lines}\n`;

/** ~10^9 nodes once its aliases are expanded, as the `tracks:` list. */
function configBomb(): string {
  const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  const names = 'abcdefghi';
  for (let i = 1; i < names.length; i++) {
    lines.push(
      `${names[i]}: &${names[i]} [${Array(9)
        .fill(`*${names[i - 1]}`)
        .join(',')}]`,
    );
  }
  return `${lines.join('\n')}\ntracks: *i\n`;
}

const CONFIG_CASES: readonly ConfigCase[] = [
  {
    name: 'a missing file',
    path: (dir) => join(dir, 'nowhere.yaml'),
    error: /^driftless: .*nowhere\.yaml: file does not exist$/m,
  },
  {
    name: 'a directory instead of a file',
    path: (dir) => dir,
    error: /^driftless: .*: is a directory, not a file$/m,
  },
  {
    name: 'invalid YAML',
    text: withTrack('    prune: [unclosed'),
    error: /^driftless: .*driftless\.yaml:10:1: invalid YAML: /m,
  },
  {
    name: 'binary content',
    text: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff]),
    error: /^driftless: .*driftless\.yaml:1:\d+: invalid YAML: /m,
  },
  {
    name: 'a duplicate key',
    text: withTrack('    prune: true\n    prune: false'),
    error: /driftless\.yaml:10:\d+: invalid YAML: duplicated mapping key/,
  },
  {
    name: 'a misspelt field',
    text: withTrack('    intreval: 1m'),
    error: /driftless\.yaml: tracks\[0\]\.intreval: unknown field/,
  },
  {
    name: 'a field of the wrong type',
    text: withTrack('    prune: "sometimes"'),
    error: /driftless\.yaml: tracks\[0\]\.prune: /,
  },
  {
    name: 'a track that is a list, not a mapping',
    text: GOOD_CONFIG.replace('  - name: web', '  - [name, web]\n  - name: web'),
    error: /driftless\.yaml: tracks\[0\]: a list is not a mapping/,
  },
  {
    name: 'rules: holding null',
    text: withTrack('    rules: [null]'),
    error: /driftless\.yaml: tracks\[0\]\.rules\[0\]: null is not a mapping/,
  },
  {
    name: 'rules: that is a number',
    text: withTrack('    rules: 5'),
    error: /driftless\.yaml: tracks\[0\]\.rules: 5 is not a list/,
  },
  {
    name: 'helm: that is a list',
    text: withTrack('    helm: [1]'),
    error: /driftless\.yaml: tracks\[0\]\.helm: a list is not a mapping/,
  },
  {
    name: 'a reference that is a number on a track writing back to Git',
    text: withTrack('    reference: 5\n    rules: [{syncTo: git, resources: [configmaps/v1]}]'),
    error: /driftless\.yaml: tracks\[0\]\.reference: 5 is not a string/,
  },
  {
    name: 'dashboard: that is a list',
    text: `${GOOD_CONFIG}dashboard: []\n`,
    error: /driftless\.yaml: dashboard: a list is not a mapping/,
  },
  {
    name: 'a subPath with ..',
    text: withTrack('    subPath: deploy/../../etc'),
    error: /driftless\.yaml: tracks\[0\]\.subPath: /,
  },
  {
    name: 'a helm chart outside the revision',
    text: withTrack('    helm: {chart: ../../charts/app}'),
    error:
      /driftless\.yaml: tracks\[0\]\.helm\.chart: "\.\.\/\.\.\/charts\/app" must be a path inside the revision/,
  },
  {
    name: 'two tracks of the same name',
    text: withTrack(
      '  - name: web\n    repository: https://git.example.com/org/other.git\n    namespace: apps',
    ),
    error: /driftless\.yaml: tracks\[1\]\.name: /,
  },
  {
    name: 'nesting deeper than the YAML reader allows',
    text: withTrack(`    ignore: ${'['.repeat(500)}${']'.repeat(500)}`),
    error: /driftless\.yaml:9:\d+: invalid YAML: nesting exceeded maxDepth \(100\)/,
  },
  {
    name: 'a YAML bomb of aliases as the track list',
    text: GOOD_CONFIG.replace(/tracks:[\s\S]*$/, configBomb()),
    error: /driftless\.yaml: tracks\[0\]: a list is not a mapping/,
  },
];

describe('bad input: config files', () => {
  let dir: string;
  let storeDir: string;
  let before_: Record<string, string>;

  /** Runs `driftless status -c <file>` in-process; what it printed and its exit code. */
  async function status(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['status', '-c', file], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { NO_COLOR: '1' },
    });
    return { code, stdout, stderr };
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-bad-config-'));
    storeDir = join(dir, 'store');
    // A track that already ran: its state and history are what must not move.
    const store = new FsStore({ path: storeDir });
    await store.write('web', { appliedRevision: 'a'.repeat(40), conditions: [] }, undefined);
    await store.appendHistory('web', {
      revision: 'a'.repeat(40),
      appliedAt: new Date().toISOString(),
      result: 'applied',
      trigger: 'manual',
    });
    before_ = await snapshot(storeDir);
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('reads the good config and the state it names (the control case)', async () => {
    // Prepare
    const file = join(dir, 'good.yaml');
    await writeFile(file, GOOD_CONFIG.replace('{{store}}', storeDir));

    // Act
    const { code, stdout, stderr } = await status(file);

    // Assess
    assert.equal(code, 0, stderr);
    assert.match(stdout, /web/);
    assert.match(stdout, /a{7}/, 'the applied revision is shown');
  });

  for (const testCase of CONFIG_CASES) {
    it(`refuses ${testCase.name}, naming it, and touches no store`, async () => {
      // Prepare
      const file = testCase.path?.(dir) ?? join(dir, 'driftless.yaml');
      if (testCase.text !== undefined) {
        const text = testCase.text;
        await writeFile(
          file,
          typeof text === 'string' ? text.replace('{{store}}', storeDir) : text,
        );
      }
      const written = testCase.text === undefined ? undefined : await readFile(file);

      // Act
      const { code, stdout, stderr } = await status(file);

      // Assess
      assert.equal(code, 2, stderr);
      assert.match(stderr, testCase.error);
      assert.doesNotMatch(stderr, /TypeError|RangeError|at .*\.ts:\d+/, 'a message, not a crash');
      assert.equal(stdout, '');
      assert.deepEqual(await snapshot(storeDir), before_, 'the store is as it was');
      if (written !== undefined) assert.deepEqual(await readFile(file), written);
    });
  }
});

// ---------------------------------------------------------------------------
// Webhook deliveries
// ---------------------------------------------------------------------------

const SECRET = 'webhook secret';

const hmac = (body: string | Buffer): string =>
  createHmac('sha256', SECRET).update(body).digest('hex');

/** A webhook fixture's text, read for each case: the cases change it. */
const fixture = (name: string): string => readFileSync(`test/fixtures/webhooks/${name}`, 'utf8');

type Host = 'github' | 'gitlab' | 'gitea' | 'bitbucket' | 'generic';

/** A correct push delivery of each host, with `id` as its delivery id. */
const VALID: Readonly<Record<Host, (id: string) => WebhookRequest>> = {
  github: (id) => {
    const body = fixture('github-push.json');
    return {
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': id,
        'content-type': 'application/json',
        'x-hub-signature-256': `sha256=${hmac(body)}`,
      },
      body,
    };
  },
  gitlab: (id) => ({
    headers: { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET, 'idempotency-key': id },
    body: fixture('gitlab-push.json'),
  }),
  gitea: (id) => {
    const body = fixture('gitea-push.json');
    return {
      headers: { 'x-gitea-event': 'push', 'x-gitea-delivery': id, 'x-gitea-signature': hmac(body) },
      body,
    };
  },
  bitbucket: (id) => {
    const body = fixture('bitbucket-server-refs-changed.json');
    return {
      headers: {
        'x-event-key': 'repo:refs_changed',
        'x-request-id': id,
        'x-hub-signature': `sha256=${hmac(body)}`,
      },
      body,
    };
  },
  generic: (id) => genericPush(id, { ref: 'refs/heads/main', after: 'c'.repeat(40) }),
};

function genericPush(id: string, fields: Record<string, unknown>): WebhookRequest {
  const body = JSON.stringify({ repository: 'https://git.example.com/org/web.git', ...fields });
  return {
    headers: { 'x-driftless-delivery': id, 'x-driftless-signature': `sha256=${hmac(body)}` },
    body,
  };
}

/** `request` with its JSON body changed by `change`, signed again as `host` signs. */
function resigned(host: Host, request: WebhookRequest, body: string): WebhookRequest {
  const headers = { ...request.headers };
  if (host === 'github') headers['x-hub-signature-256'] = `sha256=${hmac(body)}`;
  if (host === 'gitea') headers['x-gitea-signature'] = hmac(body);
  if (host === 'bitbucket') headers['x-hub-signature'] = `sha256=${hmac(body)}`;
  if (host === 'generic') headers['x-driftless-signature'] = `sha256=${hmac(body)}`;
  return { ...request, headers, body };
}

function editJson(
  host: Host,
  request: WebhookRequest,
  edit: (body: Record<string, unknown>) => void,
): WebhookRequest {
  const body = JSON.parse(request.body) as Record<string, unknown>;
  edit(body);
  return resigned(host, request, JSON.stringify(body));
}

interface WebhookCase {
  readonly name: string;
  readonly host: Host;
  /** The `<host>` of the URL, when it is not `host`. */
  readonly provider?: string;
  /** The bad delivery, from the host's valid one with the case's id. */
  request(valid: WebhookRequest): WebhookRequest;
  readonly status: number;
  readonly kind: string;
  readonly reason: RegExp;
}

const WEBHOOK_CASES: readonly WebhookCase[] = [
  {
    name: 'a signature made with another secret',
    host: 'github',
    request: (valid) => ({
      ...valid,
      headers: {
        ...valid.headers,
        'x-hub-signature-256': `sha256=${createHmac('sha256', 'guess').update(valid.body).digest('hex')}`,
      },
    }),
    status: 401,
    kind: 'rejected',
    reason: /^X-Hub-Signature-256 does not match any configured secret$/,
  },
  {
    name: 'a missing signature header',
    host: 'github',
    request: (valid) => ({
      ...valid,
      headers: { ...valid.headers, 'x-hub-signature-256': undefined },
    }),
    status: 401,
    kind: 'rejected',
    reason: /^missing X-Hub-Signature-256 header$/,
  },
  {
    name: 'a body changed after signing',
    host: 'gitea',
    request: (valid) => ({
      ...valid,
      body: valid.body.replace('refs/heads/main', 'refs/heads/evil'),
    }),
    status: 401,
    kind: 'rejected',
    reason: /^X-Gitea-Signature does not match any configured secret$/,
  },
  {
    name: 'a signature without its sha256= prefix',
    host: 'bitbucket',
    request: (valid) => ({
      ...valid,
      headers: { ...valid.headers, 'x-hub-signature': hmac(valid.body) },
    }),
    status: 401,
    kind: 'rejected',
    reason: /^X-Hub-Signature does not start with "sha256="$/,
  },
  {
    name: 'a wrong GitLab token',
    host: 'gitlab',
    request: (valid) => ({ ...valid, headers: { ...valid.headers, 'x-gitlab-token': 'guess' } }),
    status: 401,
    kind: 'rejected',
    reason: /^X-Gitlab-Token does not match any configured secret$/,
  },
  {
    name: 'a missing event header',
    host: 'github',
    request: (valid) => ({ ...valid, headers: { ...valid.headers, 'x-github-event': undefined } }),
    status: 400,
    kind: 'rejected',
    reason: /^missing X-GitHub-Event header$/,
  },
  {
    name: 'a missing GitLab event header',
    host: 'gitlab',
    request: (valid) => ({ ...valid, headers: { ...valid.headers, 'x-gitlab-event': undefined } }),
    status: 400,
    kind: 'rejected',
    reason: /^missing X-Gitlab-Event header$/,
  },
  {
    name: 'a form content type over a JSON body',
    host: 'github',
    request: (valid) => ({
      ...valid,
      headers: { ...valid.headers, 'content-type': 'application/x-www-form-urlencoded' },
    }),
    status: 400,
    kind: 'rejected',
    reason: /^form-encoded body has no payload field$/,
  },
  {
    name: 'truncated JSON',
    host: 'github',
    request: (valid) => resigned('github', valid, valid.body.slice(0, valid.body.length / 2)),
    status: 400,
    kind: 'rejected',
    reason: /^body is not valid JSON: /,
  },
  {
    name: 'JSON that is not an object',
    host: 'gitea',
    request: (valid) => resigned('gitea', valid, '[1, 2, 3]'),
    status: 400,
    kind: 'rejected',
    reason: /^body is not a JSON object$/,
  },
  {
    name: 'a huge body',
    host: 'github',
    request: (valid) => resigned('github', valid, `${valid.body}${' '.repeat(2 * 1024 * 1024)}`),
    status: 413,
    kind: 'rejected',
    reason: /^payload is larger than 1048576 bytes$/,
  },
  {
    name: 'a huge base64 body',
    host: 'bitbucket',
    request: (valid) => ({
      ...valid,
      body: Buffer.alloc(2 * 1024 * 1024, 'x').toString('base64'),
      isBase64Encoded: true,
    }),
    status: 413,
    kind: 'rejected',
    reason: /^payload is larger than 1048576 bytes$/,
  },
  {
    name: 'an unknown GitHub event',
    host: 'github',
    request: (valid) => ({ ...valid, headers: { ...valid.headers, 'x-github-event': 'issues' } }),
    status: 202,
    kind: 'ignored',
    reason: /^GitHub event "issues" is not a push$/,
  },
  {
    name: 'an unknown Bitbucket event',
    host: 'bitbucket',
    request: (valid) => ({ ...valid, headers: { ...valid.headers, 'x-event-key': 'repo:fork' } }),
    status: 202,
    kind: 'ignored',
    reason: /^Bitbucket event "repo:fork" is not a push$/,
  },
  {
    name: 'a GitLab system hook that is not a push',
    host: 'gitlab',
    request: (valid) =>
      editJson(
        'gitlab',
        { ...valid, headers: { ...valid.headers, 'x-gitlab-event': 'System Hook' } },
        (body) => {
          body.object_kind = 'merge_request';
          body.event_name = 'merge_request';
        },
      ),
    status: 202,
    kind: 'ignored',
    reason: /^GitLab System Hook of kind "merge_request" is not a push$/,
  },
  {
    name: 'a ref that is not a branch',
    host: 'github',
    request: (valid) => editJson('github', valid, (body) => (body.ref = 'refs/pull/7/head')),
    status: 202,
    kind: 'ignored',
    reason: /^push to refs\/pull\/7\/head, neither a branch nor a tag$/,
  },
  {
    name: 'a branch deletion',
    host: 'gitea',
    request: (valid) => editJson('gitea', valid, (body) => (body.after = '0'.repeat(40))),
    status: 202,
    kind: 'ignored',
    reason: /^branch deletion of refs\/heads\/main$/,
  },
  {
    name: 'a short ref name in a generic push',
    host: 'generic',
    request: (valid) =>
      genericPush(String(valid.headers['x-driftless-delivery']), {
        ref: 'main',
        after: 'c'.repeat(40),
      }),
    status: 400,
    kind: 'rejected',
    reason: /^ref "main" is not a full ref name/,
  },
  {
    name: 'a generic push whose after is not a commit',
    host: 'generic',
    request: (valid) =>
      genericPush(String(valid.headers['x-driftless-delivery']), {
        ref: 'refs/heads/main',
        after: 'HEAD~1',
      }),
    status: 400,
    kind: 'rejected',
    reason: /^after "HEAD~1" is not a full commit sha$/,
  },
  {
    name: 'a push without ref',
    host: 'github',
    request: (valid) => editJson('github', valid, (body) => delete body.ref),
    status: 400,
    kind: 'rejected',
    reason: /^payload has no string field ref$/,
  },
  {
    name: 'a push naming no repository',
    host: 'github',
    request: (valid) => editJson('github', valid, (body) => delete body.repository),
    status: 400,
    kind: 'rejected',
    reason: /^payload names no repository URL \(looked at repository\.clone_url, /,
  },
  {
    name: 'a Bitbucket push whose changes are not a list',
    host: 'bitbucket',
    request: (valid) => editJson('bitbucket', valid, (body) => (body.changes = { ref: 'main' })),
    status: 400,
    kind: 'rejected',
    reason: /^payload has no array changes$/,
  },
  {
    name: 'an unknown provider',
    host: 'github',
    provider: 'gitbucket',
    request: (valid) => valid,
    status: 404,
    kind: 'unknown-provider',
    reason: /^no webhook is configured here$/,
  },
];

describe('bad input: webhook deliveries', () => {
  let dir: string;
  let deliveries: FsStore;
  const queued: Job[] = [];
  let deps: AcceptWebhookDeps;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-bad-webhook-'));
    deliveries = new FsStore({ path: dir });
    const config = parseConfig(
      [
        'tracks:',
        '  - name: web',
        '    repository: https://github.com/Octo-Org/Manifests.git',
        '  - name: generic',
        '    repository: https://git.example.com/org/web.git',
      ].join('\n'),
      'driftless.yaml',
    );
    deps = {
      tracks: config.tracks,
      secretsOf: async () => [SECRET],
      deliveries,
      queue: { enqueue: async (job) => void queued.push(job) },
    };
  });

  after(() => rm(dir, { recursive: true, force: true }));

  WEBHOOK_CASES.forEach((testCase, index) => {
    it(`answers ${testCase.name} with ${testCase.status}, naming it, and marks nothing`, async () => {
      // Prepare
      const id = `bad-input-${index}`;
      const request = testCase.request(VALID[testCase.host](id));
      queued.length = 0;

      // Act
      const answer = await acceptWebhook(testCase.provider ?? testCase.host, request, deps);
      const jobsAfterBad = queued.length;
      const retry = await acceptWebhook(testCase.host, VALID[testCase.host](id), deps);

      // Assess
      assert.equal(answer.status, testCase.status, answer.body.reason);
      assert.equal(answer.body.kind, testCase.kind);
      assert.match(answer.body.reason, testCase.reason);
      assert.ok(!answer.body.reason.includes(SECRET));
      assert.equal(jobsAfterBad, 0, 'no fetch job was queued');
      // Nothing was marked: the host's correct delivery of the same id is taken, not a duplicate.
      assert.equal(retry.body.kind, 'push', retry.body.reason);
      assert.equal(retry.body.deliveryId, id);
    });
  });

  it('marks a correct delivery once: the same id again is a duplicate (the control case)', async () => {
    // Prepare
    const request = VALID.github('control');
    queued.length = 0;

    // Act
    const first = await acceptWebhook('github', request, deps);
    const second = await acceptWebhook('github', request, deps);

    // Assess
    assert.equal(first.body.kind, 'push');
    assert.deepEqual(first.body.tracks, ['web']);
    assert.equal(second.body.kind, 'duplicate');
    assert.equal(queued.length, 1);
  });
});

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/parse-config.ts';
import { identify } from '../../src/dashboard/credentials.ts';
import { handleDashboard, type DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import type { DashboardRequest, Identity } from '../../src/dashboard/http-types.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import type { OverviewRow, TrackDetail } from '../../src/dashboard/types.ts';
import { parseCommitInfo } from '../../src/source/git/commit-info.ts';
import {
  renderManifests,
  serializeBundle,
  type RevisionFile,
  type ScopeResolver,
} from '../../src/render/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { judgeObjects } from '../../src/sync/object-statuses.ts';
import { objectKey, refOf, type KubeObject } from '../../src/cluster/kube-object.ts';

const ONE = '1'.repeat(40);
const TWO = '2'.repeat(40);
const encoder = new TextEncoder();
const scopeOf: ScopeResolver = () => 'Namespaced';

const CONFIG = parseConfig(
  `
tracks:
  - name: web
    repository: https://git.example.com/web.git
  - name: api
    repository: https://git.example.com/api.git
`,
  'driftless.yaml',
);

function artifact(level: string, password: string): Uint8Array {
  const files: RevisionFile[] = [
    {
      path: 'cm.yaml',
      content: encoder.encode(
        `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: ${level}}\n`,
      ),
    },
    {
      path: 'secret.yaml',
      content: encoder.encode(
        `apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: ${password}}\n`,
      ),
    },
  ];
  return serializeBundle(renderManifests(files, { scopeOf, defaultNamespace: 'apps' }));
}

const ALICE: Identity = { kind: 'user', name: 'alice' };
const NOBODY: Identity = { kind: 'anonymous' };

describe('dashboard routes', () => {
  let dir: string;
  let store: FsStore;
  let jobs: Job[];
  const deps = (overrides: Partial<DashboardDeps> = {}): DashboardDeps => ({
    tracks: async () => CONFIG.tracks,
    state: store,
    artifacts: store,
    queue: { enqueue: async (job) => void jobs.push(job) },
    objects: async (_track, state) => storedObjects(state),
    readAccess: 'open',
    signIn: ['basic'],
    assets: async (path) =>
      path === 'index.html' ? { body: '<!doctype html>', contentType: 'text/html' } : undefined,
    ...overrides,
  });
  const request = (
    method: string,
    path: string,
    fields: Partial<DashboardRequest> = {},
  ): DashboardRequest => ({
    method,
    path,
    query: new URLSearchParams(),
    headers: { host: 'dash.test', 'content-type': 'application/json' },
    body: '',
    identity: ALICE,
    ...fields,
  });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-'));
    store = new FsStore({ path: dir });
    await store.put('web', ONE, artifact('info', 'PLANTED-SECRET-1'));
    await store.put('web', TWO, artifact('debug', 'PLANTED-SECRET-2'));
    await updateTrackState(store, 'web', (state) => {
      state.appliedRevision = TWO;
      state.desiredRevision = TWO;
      state.commits = {
        [TWO]: { message: 'Turn on debug logs', author: 'Ann <ann@example.com>', date: '' },
      };
      state.conditions = [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Applied',
          message: 'applied',
          lastTransitionTime: '2026-11-25T00:00:00Z',
        },
      ];
      state.observed = {
        at: '2026-11-25T00:01:00Z',
        objects: [
          {
            subject: 'ConfigMap/apps/settings',
            apiVersion: 'v1',
            kind: 'ConfigMap',
            sync: 'OutOfSync',
            health: 'Healthy',
            message: 'changed by kubectl-edit: /data/level',
            patch: [{ op: 'replace', path: '/data/level', value: 'debug' }],
            changedBy: ['kubectl-edit'],
          },
        ],
      };
    });
    await store.appendHistory('web', {
      revision: TWO,
      appliedAt: '2026-11-25T00:00:00Z',
      result: 'applied',
      trigger: 'webhook',
      durationMs: 1200,
    });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('answers GET /api/tracks with the status -o json of every configured track', async () => {
    const answer = await handleDashboard(request('GET', '/api/tracks'), deps());
    const body = JSON.parse(answer.body) as { track: string; appliedRevision: string | null }[];
    assert.equal(answer.status, 200);
    assert.deepEqual(
      body.map((entry) => [entry.track, entry.appliedRevision]),
      [
        ['web', TWO],
        ['api', null],
      ],
    );
  });

  it('gives the overview its commit, last sync and drift count', async () => {
    const answer = await handleDashboard(request('GET', '/api/overview'), deps());
    const [web, api] = JSON.parse(answer.body) as OverviewRow[];
    assert.equal(web?.appliedCommit?.message, 'Turn on debug logs');
    assert.equal(web?.lastSync?.durationMs, 1200);
    assert.equal(web?.drifted, 1);
    assert.deepEqual([api?.ready, api?.drifted, api?.lastSync], ['Unknown', null, null]);
  });

  it("shows a track's objects with their drift patch, history and stored revisions", async () => {
    const answer = await handleDashboard(request('GET', '/api/tracks/web'), deps());
    const detail = JSON.parse(answer.body) as TrackDetail;
    assert.equal(detail.objects.source, 'stored');
    assert.deepEqual(detail.objects.objects[0]?.patch, [
      { op: 'replace', path: '/data/level', value: 'debug' },
    ]);
    assert.deepEqual(
      new Map(detail.revisions.map((r) => [r.revision, r.commit?.author ?? null])),
      new Map([
        [TWO, 'Ann <ann@example.com>'],
        [ONE, null],
      ]),
    );
    assert.equal(detail.history[0]?.result, 'applied');
  });

  it('shows manifests and diffs of stored revisions with Secret values masked', async () => {
    const manifests = await handleDashboard(
      request('GET', `/api/tracks/web/revisions/${ONE}/manifests`),
      deps(),
    );
    assert.match(manifests.body, /level: info/);
    assert.match(manifests.body, /password: '\*{8}'/);
    assert.doesNotMatch(manifests.body, /PLANTED-SECRET/);
    const diff = await handleDashboard(
      request('GET', '/api/tracks/web/diff', {
        query: new URLSearchParams({ from: ONE, to: TWO }),
      }),
      deps(),
    );
    assert.match(diff.body, /^-\s+level: info$/m);
    assert.match(diff.body, /^\+\s+level: debug$/m);
    assert.doesNotMatch(diff.body, /PLANTED-SECRET/);
  });

  it('refuses reading without a user when readAccess is authenticated', async () => {
    const closed = deps({ readAccess: 'authenticated' });
    const anonymous = await handleDashboard(
      request('GET', '/api/overview', { identity: NOBODY }),
      closed,
    );
    const session = await handleDashboard(
      request('GET', '/api/session', { identity: NOBODY }),
      closed,
    );
    const signedIn = await handleDashboard(request('GET', '/api/overview'), closed);
    assert.deepEqual([anonymous.status, session.status, signedIn.status], [401, 200, 200]);
    assert.equal(anonymous.headers['WWW-Authenticate'], undefined);
  });

  it('queues a rollback to a stored revision with the user as by', async () => {
    jobs = [];
    const answer = await handleDashboard(
      request('POST', '/api/tracks/web/rollback', { body: JSON.stringify({ revision: ONE }) }),
      deps(),
    );
    assert.equal(answer.status, 202);
    assert.deepEqual(jobs, [{ type: 'rollback', track: 'web', revision: ONE, by: 'alice' }]);
  });

  it('queues sync, unpin, suspend and resume as the rollback function would', async () => {
    jobs = [];
    for (const action of ['sync', 'unpin', 'suspend', 'resume']) {
      const answer = await handleDashboard(request('POST', `/api/tracks/web/${action}`), deps());
      assert.equal(answer.status, 202, answer.body);
    }
    assert.deepEqual(jobs, [
      { type: 'fetch', track: 'web', trigger: 'manual', by: 'alice' },
      { type: 'lifecycle', track: 'web', action: 'unpin', by: 'alice' },
      { type: 'lifecycle', track: 'web', action: 'suspend', by: 'alice' },
      { type: 'lifecycle', track: 'web', action: 'resume', by: 'alice' },
    ]);
  });

  it('refuses actions without a user, from another site, or without a JSON body type', async () => {
    jobs = [];
    const cases: [Partial<DashboardRequest>, number][] = [
      [{ identity: NOBODY }, 401],
      [{ identity: { kind: 'anonymous', refused: 'wrong user name or password' } }, 401],
      [{ headers: { host: 'dash.test', 'content-type': 'text/plain' } }, 415],
      [
        {
          headers: {
            host: 'dash.test',
            'content-type': 'application/json',
            origin: 'https://evil.test',
          },
        },
        403,
      ],
      [
        {
          headers: {
            host: 'dash.test',
            'content-type': 'application/json',
            'sec-fetch-site': 'cross-site',
          },
        },
        403,
      ],
    ];
    for (const [fields, status] of cases) {
      const answer = await handleDashboard(request('POST', '/api/tracks/web/sync', fields), deps());
      assert.equal(answer.status, status, JSON.stringify(fields));
    }
    assert.deepEqual(jobs, []);
  });

  it('answers bad requests with the reason, naming the track or revision', async () => {
    const unknown = await handleDashboard(request('POST', '/api/tracks/nope/sync'), deps());
    const notStored = await handleDashboard(
      request('POST', '/api/tracks/web/rollback', { body: JSON.stringify({ revision: 'abcd' }) }),
      deps(),
    );
    const badBody = await handleDashboard(
      request('POST', '/api/tracks/web/rollback', { body: '{"revision":' }),
      deps(),
    );
    const badAction = await handleDashboard(request('POST', '/api/tracks/web/delete'), deps());
    assert.deepEqual(
      [unknown.status, notStored.status, badBody.status, badAction.status],
      [404, 409, 400, 404],
    );
    assert.match(JSON.parse(unknown.body).error, /track "nope" is not configured/);
    assert.match(JSON.parse(notStored.body).error, /abcd/);
  });

  it('runs a rollback from the rollback route only: an "action" in its body is refused', async () => {
    jobs = [];
    const bodies = [
      { action: 'delete' },
      { action: 'suspend' },
      { revision: ONE, action: 'delete' },
      { previous: true, policy: 'Delete' },
      { revision: ONE, track: 'other' },
    ];
    for (const body of bodies) {
      const answer = await handleDashboard(
        request('POST', '/api/tracks/web/rollback', { body: JSON.stringify(body) }),
        deps(),
      );
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.match(JSON.parse(answer.body).error, /rollback takes \{"revision"/);
    }
    const emptyBodyAction = await handleDashboard(
      request('POST', '/api/tracks/web/suspend', { body: JSON.stringify({ action: 'delete' }) }),
      deps(),
    );
    assert.equal(emptyBodyAction.status, 400);
    assert.deepEqual(jobs, []);
  });

  it('answers a body that is not JSON with where it fails, never with what it holds', async () => {
    const bodies: [string, RegExp][] = [
      ['nope-PLANTED', /at position 1\b/],
      ['{"revision": PLANTED}', /at position 13\b/],
      ['{PLANTED', /at position 1\b/],
      ['{"revision": "PLANTED', /ends before/],
      ['{"revision": ', /ends before/],
    ];
    for (const [body, where] of bodies) {
      const answer = await handleDashboard(
        request('POST', '/api/tracks/web/rollback', { body }),
        deps(),
      );
      assert.equal(answer.status, 400, body);
      const message = (JSON.parse(answer.body) as { error: string }).error;
      assert.match(message, /^the body is not JSON/, body);
      assert.match(message, where, body);
      assert.doesNotMatch(message, /PLANTED|nope/, body);
    }
  });

  it("says what a dashboard rollback takes, not the manual invoke's fields", async () => {
    jobs = [];
    const bodies = [
      {},
      { revision: 'not a sha' },
      { previous: false },
      { revision: ONE, previous: true },
      { 'PLANTED-key': ONE },
    ];
    for (const body of bodies) {
      const answer = await handleDashboard(
        request('POST', '/api/tracks/web/rollback', { body: JSON.stringify(body) }),
        deps(),
      );
      assert.equal(answer.status, 400, JSON.stringify(body));
      const message = (JSON.parse(answer.body) as { error: string }).error;
      assert.match(message, /\{"revision": "<sha>"\} or \{"previous": true\}/, message);
      assert.doesNotMatch(message, /"track"|"action"|suspend|delete|PLANTED/, message);
    }
    assert.deepEqual(jobs, []);
  });

  it('names no track to someone who may not read, nor to an anonymous actor', async () => {
    const closed = deps({ readAccess: 'authenticated' });
    const paths = ['/api/tracks/nope', '/api/tracks/nope/status', '/api/tracks/web/status'];
    for (const path of paths) {
      const answer = await handleDashboard(request('GET', path, { identity: NOBODY }), closed);
      assert.equal(answer.status, 401, path);
      assert.doesNotMatch(answer.body, /web/, path);
    }
    for (const path of ['/api/tracks/nope/sync', '/api/tracks/nope/rollback']) {
      const answer = await handleDashboard(request('POST', path, { identity: NOBODY }), deps());
      assert.equal(answer.status, 401, path);
      assert.doesNotMatch(answer.body, /web/, path);
    }
    const signedIn = await handleDashboard(request('GET', '/api/tracks/nope'), closed);
    assert.equal(signedIn.status, 404);
    assert.match(JSON.parse(signedIn.body).error, /tracks: web/);
  });

  it("takes the overview's last sync from syncs only, not from newer write-backs, drift corrections or deletes", async () => {
    // Prepare: under the sync of track "api", newer entries of other jobs with the same results.
    const entry = (at: string, fields: Record<string, unknown>) =>
      store.appendHistory('api', {
        revision: ONE,
        appliedAt: `2026-11-26T00:00:0${at}Z`,
        trigger: 'schedule',
        result: 'failed',
        ...fields,
      });
    await entry('0', { result: 'applied', trigger: 'webhook', durationMs: 700 });
    await entry('1', { trigger: 'write-back', writtenBack: [], error: 'push refused' });
    await entry('2', { drifted: ['ConfigMap/apps/settings'], missing: [] });
    await entry('3', { trigger: 'manual', action: 'delete', error: 'forbidden' });
    await entry('4', { result: 'unchanged', trigger: 'write-back', writtenBack: [] });

    // Act
    const answer = await handleDashboard(request('GET', '/api/overview'), deps());

    // Assess
    const api = (JSON.parse(answer.body) as OverviewRow[]).find(
      (row) => row.status.track === 'api',
    );
    assert.equal(api?.lastSync?.durationMs, 700);
  });

  it('serves the page with a strict content security policy, and only built files', async () => {
    const page = await handleDashboard(request('GET', '/'), deps());
    const escape = await handleDashboard(request('GET', '/assets/../../etc/passwd'), deps());
    assert.equal(page.status, 200);
    assert.match(page.headers['Content-Security-Policy'] ?? '', /script-src 'self'/);
    assert.equal(escape.status, 404);
  });
});

describe('dashboard credentials', () => {
  const credentials = { users: [{ name: 'alice', password: 's3cret' }], tokens: ['tok-1'] };
  const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

  it('knows a basic-auth user and a bearer token, and refuses wrong ones', () => {
    assert.deepEqual(identify(basic('alice:s3cret'), credentials), { kind: 'user', name: 'alice' });
    assert.deepEqual(identify('Bearer tok-1', credentials), { kind: 'user', name: 'token 1' });
    assert.equal(identify(basic('alice:nope'), credentials).kind, 'anonymous');
    assert.match(JSON.stringify(identify('Bearer nope', credentials)), /the token is not valid/);
    assert.deepEqual(identify(undefined, credentials), { kind: 'anonymous' });
  });

  it('refuses an empty token or password, even where the config holds an empty one', () => {
    const empty = { users: [{ name: 'carol', password: '' }], tokens: [''] };
    for (const header of ['Bearer', 'Bearer ', 'bearer \t', basic('carol:'), basic('carol')]) {
      for (const held of [empty, credentials]) {
        const identity = identify(header, held);
        assert.equal(identity.kind, 'anonymous', header);
        assert.ok('refused' in identity && identity.refused !== undefined, header);
      }
    }
  });

  it('never quotes an Authorization header it refuses', () => {
    for (const header of ['tok-1', 'PLANTED-token', 'Token PLANTED', 'Digest PLANTED="x"']) {
      const identity = identify(header, credentials);
      assert.equal(identity.kind, 'anonymous');
      const refused = 'refused' in identity ? (identity.refused ?? '') : '';
      assert.match(refused, /authorization scheme is not supported \(use "Bearer <token>"/);
      assert.doesNotMatch(refused, /tok-1|PLANTED|Token|Digest/);
    }
  });
});

describe('commit info', () => {
  it('reads the author and message of a signed commit object', () => {
    const raw = encoder.encode(
      'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n' +
        'author Ann Smith <ann@example.com> 1764028800 +0100\n' +
        'committer Ann Smith <ann@example.com> 1764028800 +0100\n' +
        'gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n' +
        '\nTurn on debug logs\n\nBecause of the incident.\n',
    );
    assert.deepEqual(parseCommitInfo(raw), {
      message: 'Turn on debug logs\n\nBecause of the incident.',
      author: 'Ann Smith <ann@example.com>',
      date: '2025-11-25T00:00:00.000Z',
    });
  });
});

describe('objects as the dashboard shows them', () => {
  const bundle = renderManifests(
    [
      {
        path: 'objects.yaml',
        content: encoder.encode(
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: debug}\n---\n' +
            'apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ndata: {password: R0lU}\n',
        ),
      },
    ],
    { scopeOf, defaultNamespace: 'apps' },
  );
  const live = (object: (typeof bundle.objects)[number], data: Record<string, string>) => {
    const manifest = object.manifest as KubeObject;
    return [objectKey(refOf(manifest)), { ...manifest, data }] as const;
  };
  const [settings, secret] = [...bundle.objects].sort((a, b) => a.kind.localeCompare(b.kind));
  const drift = (object: (typeof bundle.objects)[number], path: string, value: string) => ({
    subject: object.subject,
    ref: refOf(object.manifest as KubeObject),
    patch: [{ op: 'replace' as const, path, value }],
    changedBy: ['kubectl-edit'],
  });
  const track = parseConfig(
    'tracks: [{name: web, repository: https://git.example.com/web.git}]',
    'driftless.yaml',
  ).tracks[0]!;

  it("shows what the cluster has beside Git's value, but no Secret value on either side", async () => {
    const observed = await judgeObjects(track, {
      selected: bundle.objects,
      live: {
        found: new Map([
          live(settings!, { level: 'trace' }),
          live(secret!, { password: 'SEFORA==' }),
        ]),
        errors: new Map(),
      },
      report: {
        drifted: [
          drift(settings!, '/data/level', 'debug'),
          drift(secret!, '/data/password', 'R0lU'),
        ],
        missing: [],
        errors: [],
        checked: 2,
        suspects: 2,
      },
      failed: {},
    });
    const patchOf = (kind: string) => observed.find((o) => o.kind === kind)?.patch;
    assert.deepEqual(patchOf('ConfigMap'), [
      { op: 'test', path: '/data/level', value: 'trace' },
      { op: 'replace', path: '/data/level', value: 'debug' },
    ]);
    assert.deepEqual(patchOf('Secret'), [
      { op: 'test', path: '/data/password', value: '********' },
      { op: 'replace', path: '/data/password', value: '********' },
    ]);
  });
});

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import type { HttpClient } from 'isomorphic-git';
import { parseConfig } from '../../src/config/parse-config.ts';
import { forgetSecretValuesForTests } from '../../src/redact.ts';
import { createGitSource } from '../../src/source/git/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentialsFor, TOKEN_USERNAME } from '../../src/source/git/credentials.ts';
import { GitAuthError } from '../../src/source/git/errors.ts';
import { GitHubAppTokens } from '../../src/source/git/github-app.ts';
import { KeyQueue } from '../../src/source/git/key-queue.ts';
import {
  cacheKeyOf,
  displayUrl,
  locateRepository,
  cacheIdentity,
} from '../../src/source/git/repository-location.ts';
import { classifyReference, selectRef, type RefEntry } from '../../src/source/git/select-ref.ts';
import {
  parseAdvertisement,
  parseUploadPackResponse,
  UnknownWantError,
  UploadPackError,
  uploadPackRequest,
} from '../../src/source/git/upload-pack.ts';

const CONTEXT = { track: 'web', repository: 'https://git.example.com/org/repo.git' };
const SHA = (digit: string): string => digit.repeat(40);

describe('repository locations', () => {
  it('normalises scheme, host, default port and trailing slashes', () => {
    // Prepare
    const written = 'HTTPS://Git.Example.COM:443/org/repo.git/';

    // Act
    const normalized = cacheIdentity(written);

    // Assess
    assert.equal(normalized, 'https://git.example.com/org/repo.git');
  });

  it('gives equal URLs one cache key and different repositories different keys', () => {
    // Act
    const a = cacheKeyOf('https://git.example.com/org/repo.git');
    const b = cacheKeyOf('https://GIT.example.com:443/org/repo.git/#frag');
    const other = cacheKeyOf('https://git.example.com/org/other.git');
    const withoutSuffix = cacheKeyOf('https://git.example.com/org/repo');

    // Assess
    assert.equal(a, b);
    assert.notEqual(a, other);
    assert.notEqual(a, withoutSuffix);
    assert.match(a, /^repo-[0-9a-f]{32}$/);
  });

  it('keeps credentials out of the cache key', () => {
    // Act
    const plain = cacheKeyOf('https://git.example.com/org/repo.git');
    const withCredentials = cacheKeyOf('https://user:s3cret@git.example.com/org/repo.git');

    // Assess
    assert.equal(withCredentials, plain);
    assert.doesNotMatch(withCredentials, /s3cret|user/);
  });

  it('classifies https URLs as remote, file URLs and paths as local', () => {
    // Act
    const remote = locateRepository('https://git.example.com/org/repo.git#x', '/work');
    const fileUrl = locateRepository('file:///srv/git/repo.git', '/work');
    const relative = locateRepository('../manifests', '/work/app');

    // Assess
    assert.deepEqual(remote, {
      kind: 'remote',
      url: 'https://git.example.com/org/repo.git',
      display: 'https://git.example.com/org/repo.git#x',
      cacheKey: cacheKeyOf('https://git.example.com/org/repo.git'),
    });
    assert.deepEqual(fileUrl, {
      kind: 'local',
      path: '/srv/git/repo.git',
      display: 'file:///srv/git/repo.git',
    });
    assert.deepEqual(relative, { kind: 'local', path: '/work/manifests', display: '../manifests' });
  });

  it('locates SSH URLs in both forms under one URL form', () => {
    // Act
    const scp = locateRepository('git@github.com:org/repo.git', '/work');
    const url = locateRepository('ssh://git@github.com:22/~/org/repo.git', '/work');

    // Assess
    assert.ok('kind' in scp && scp.kind === 'remote' && 'kind' in url && url.kind === 'remote');
    assert.equal(scp.url, 'ssh://git@github.com:22/~/org/repo.git');
    assert.equal(scp.cacheKey, url.cacheKey);
    assert.equal(scp.display, 'git@github.com:org/repo.git');
    assert.deepEqual(scp.ssh, { user: 'git', host: 'github.com', port: 22, path: 'org/repo.git' });
  });

  it('refuses credentials in the URL without repeating them', () => {
    // Act
    const located = locateRepository('https://deploy:hunter2@git.example.com/org/repo.git', '/w');

    // Assess
    assert.ok('error' in located);
    assert.doesNotMatch(located.error, /hunter2/);
    assert.equal(displayUrl('https://deploy:hunter2@h/r.git'), 'https://h/r.git');
  });
});

describe('reference classification', () => {
  it('reads a full sha, refs/..., HEAD, a short name, and a semver range', () => {
    // Act
    const results = [
      classifyReference({ reference: SHA('A') }),
      classifyReference({ reference: 'refs/pull/7/head' }),
      classifyReference({ reference: 'HEAD' }),
      classifyReference({ reference: 'release-1' }),
      classifyReference({ reference: 'abc1234' }),
      classifyReference({}),
      classifyReference({ reference: 'main', semver: '^1' }),
    ];

    // Assess
    assert.deepEqual(results, [
      { kind: 'commit', sha: SHA('a') },
      { kind: 'full', ref: 'refs/pull/7/head' },
      { kind: 'full', ref: 'HEAD' },
      { kind: 'name', name: 'release-1' },
      { kind: 'name', name: 'abc1234' },
      { kind: 'name', name: 'main' },
      { kind: 'semver', range: '^1' },
    ]);
  });
});

describe('ref selection', () => {
  const refs: RefEntry[] = [
    { ref: 'HEAD', oid: SHA('1'), target: 'refs/heads/main' },
    { ref: 'refs/heads/main', oid: SHA('1') },
    { ref: 'refs/heads/both', oid: SHA('2') },
    { ref: 'refs/tags/both', oid: SHA('3') },
    { ref: 'refs/tags/v1.2.0', oid: SHA('4'), peeled: SHA('5') },
    { ref: 'refs/tags/1.4.0', oid: SHA('6') },
    { ref: 'refs/tags/v1.4.0', oid: SHA('6') },
    { ref: 'refs/tags/v1.5.0-rc.1', oid: SHA('8') },
    { ref: 'refs/tags/v2.0.0', oid: SHA('9') },
    { ref: 'refs/tags/release-3', oid: SHA('a') },
  ];
  const repo = 'https://h/r.git';

  it('finds a branch and an annotated tag by short name', async () => {
    // Act
    const branch = await selectRef(refs, { kind: 'name', name: 'main' }, repo);
    const tag = await selectRef(refs, { kind: 'name', name: 'v1.2.0' }, repo);

    // Assess
    assert.deepEqual(branch, { entry: { ref: 'refs/heads/main', oid: SHA('1') } });
    assert.deepEqual(tag, { entry: refs[4] });
  });

  it('refuses a name that is both a branch and a tag', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'name', name: 'both' }, repo);

    // Assess
    assert.ok('error' in selection);
    assert.equal(selection.error, 'ambiguous');
    assert.match(selection.message, /refs\/heads\/both or refs\/tags\/both/);
  });

  it('names the missing reference and lists available refs', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'name', name: 'nope' }, repo);

    // Assess
    assert.ok('error' in selection);
    assert.equal(selection.error, 'not-found');
    assert.match(selection.message, /"nope" is neither a branch nor a tag in https:\/\/h\/r\.git/);
    assert.match(
      selection.message,
      /\(available: both, main, 1\.4\.0, both, release-3, v1\.2\.0, v1\.4\.0, v1\.5\.0-rc\.1 and 1 more\)$/,
    );
  });

  it('hints at full shas for an abbreviated sha', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'name', name: 'abc1234' }, repo);

    // Assess
    assert.ok('error' in selection);
    assert.match(selection.message, /use the full 40-hex sha/);
  });

  it('takes refs/... and HEAD literally', async () => {
    // Act
    const head = await selectRef(refs, { kind: 'full', ref: 'HEAD' }, repo);
    const missing = await selectRef(refs, { kind: 'full', ref: 'refs/heads/nope' }, repo);

    // Assess
    assert.deepEqual(head, { entry: refs[0] });
    assert.ok('error' in missing);
  });

  it('picks the newest tag in a semver range, ignoring prereleases, v2 and non-semver tags', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'semver', range: '>=1.0.0 <2' }, repo);

    // Assess: 1.4.0 and v1.4.0 tag one commit; the name decides, so the choice is stable.
    assert.deepEqual(selection, { entry: refs[5] });
  });

  it('includes a prerelease when the range names one', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'semver', range: '>=1.5.0-rc.0 <2' }, repo);

    // Assess
    assert.deepEqual(selection, { entry: refs[7] });
  });

  it('lists the semver tags when no tag matches', async () => {
    // Act
    const selection = await selectRef(refs, { kind: 'semver', range: '>=3' }, repo);

    // Assess
    assert.ok('error' in selection);
    assert.match(selection.message, /no tag matching semver range ">=3"/);
    assert.match(selection.message, /semver tags: v2\.0\.0, v1\.5\.0-rc\.1, /);
    assert.doesNotMatch(selection.message, /release-3/);
  });
});

describe('credentials', () => {
  const secret = { scheme: 'env', name: 'GIT_CREDENTIALS' } as const;

  it('splits a basic secret at the first colon and drops a trailing newline', async () => {
    // Act
    const credentials = await credentialsFor(
      { type: 'basic', secret },
      async () => 'deploy:pa:ss\n',
      CONTEXT,
    );

    // Assess
    assert.deepEqual(credentials, { username: 'deploy', password: 'pa:ss' });
  });

  it('refuses a basic secret without a user name, naming the reference and not the value', async () => {
    // Act
    const attempt = credentialsFor({ type: 'basic', secret }, async () => 'hunter2', CONTEXT);

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof GitAuthError);
      assert.equal(error.code, 'GIT_AUTH_FAILED');
      assert.match(error.message, /^track "web": the auth secret env:GIT_CREDENTIALS/);
      assert.doesNotMatch(error.message, /hunter2/);
      return true;
    });
  });

  it('sends a token as the password of x-access-token', async () => {
    // Act
    const credentials = await credentialsFor(
      { type: 'token', secret },
      async () => ' ghp_abc \n',
      CONTEXT,
    );

    // Assess
    assert.deepEqual(credentials, { username: TOKEN_USERNAME, password: 'ghp_abc' });
    assert.equal(TOKEN_USERNAME, 'x-access-token');
  });

  it('sends a GitHub App installation token as the password of x-access-token', async () => {
    // Prepare: a fake of our own token port.
    const asked: string[] = [];
    const tokens = new GitHubAppTokens({
      request: async (identity) => {
        asked.push(
          `${identity.appId}/${identity.installationId}@${identity.apiUrl}:${identity.privateKey}`,
        );
        return { token: 'ghs_installation', expiresAt: Date.now() + 3600_000 };
      },
    });

    // Act
    const credentials = await credentialsFor(
      {
        type: 'githubApp',
        appId: '1',
        installationId: '2',
        privateKey: secret,
        apiUrl: 'https://ghe.example/api/v3',
      },
      async () => 'PEM',
      CONTEXT,
      tokens,
    );

    // Assess
    assert.deepEqual(credentials, { username: TOKEN_USERNAME, password: 'ghs_installation' });
    assert.deepEqual(asked, ['1/2@https://ghe.example/api/v3:PEM']);
  });

  it('reuses an installation token until 5 minutes before it expires, then asks for a new one', async () => {
    // Prepare
    let now = 1_000_000;
    let issued = 0;
    const tokens = new GitHubAppTokens({
      now: () => now,
      request: async () => ({ token: `t${++issued}`, expiresAt: now + 60 * 60_000 }),
    });
    const identity = { appId: '1', installationId: '2', privateKey: 'PEM' };

    // Act + Assess
    const concurrent = await Promise.all([tokens.token(identity), tokens.token(identity)]);
    assert.deepEqual(concurrent, ['t1', 't1'], 'concurrent fetches share one request');
    now += 54 * 60_000;
    assert.equal(await tokens.token(identity), 't1', '6 minutes left: reused');
    now += 2 * 60_000;
    assert.equal(await tokens.token(identity), 't2', '4 minutes left: refreshed');
    assert.equal(
      await tokens.token({ ...identity, installationId: '3' }),
      't3',
      'per installation',
    );
    assert.equal(issued, 3);
  });

  it('refuses a failed token request naming the app, without the key, and asks again next time', async () => {
    // Prepare
    let calls = 0;
    const tokens = new GitHubAppTokens({
      request: async () => {
        calls++;
        throw Object.assign(new Error('Bad credentials'), { status: 401 });
      },
    });
    const auth = {
      type: 'githubApp' as const,
      appId: '7',
      installationId: '8',
      privateKey: secret,
    };

    // Act
    const attempt = credentialsFor(auth, async () => 'PLANTED-PEM', CONTEXT, tokens);

    // Assess
    await assert.rejects(attempt, (error: Error) => {
      assert.ok(error instanceof GitAuthError);
      assert.match(
        error.message,
        /GitHub App 7, installation 8 at https:\/\/api\.github\.com: no installation token: HTTP 401: Bad credentials/,
      );
      assert.ok(!error.message.includes('PLANTED-PEM'));
      return true;
    });
    await assert.rejects(credentialsFor(auth, async () => 'PLANTED-PEM', CONTEXT, tokens));
    assert.equal(calls, 2, 'a failure is not cached');
  });

  it('reads no secret for a track without auth', async () => {
    // Prepare
    let reads = 0;

    // Act
    const credentials = await credentialsFor(undefined, async () => `${++reads}`, CONTEXT);

    // Assess
    assert.equal(credentials, undefined);
    assert.equal(reads, 0);
  });
});

describe('the per-directory queue', () => {
  it('runs tasks of one key one at a time, in order, past failures', async () => {
    // Prepare
    const queue = new KeyQueue();
    const events: string[] = [];
    const task =
      (name: string, fail = false) =>
      async () => {
        events.push(`start ${name}`);
        await sleep(10);
        events.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      };

    // Act
    const results = await Promise.allSettled([
      queue.run('dir', task('a')),
      queue.run('dir', task('b', true)),
      queue.run('dir', task('c')),
    ]);

    // Assess
    assert.deepEqual(events, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
  });

  it('runs tasks of different keys concurrently', async () => {
    // Prepare
    const queue = new KeyQueue();
    const events: string[] = [];
    const task = (name: string) => async () => {
      events.push(`start ${name}`);
      await sleep(10);
      events.push(`end ${name}`);
    };

    // Act
    await Promise.all([queue.run('one', task('a')), queue.run('two', task('b'))]);

    // Assess
    assert.deepEqual(events.slice(0, 2), ['start a', 'start b']);
  });
});

describe('the upload-pack exchange', () => {
  const pkt = (payload: string | Buffer): Buffer => {
    const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'latin1');
    return Buffer.concat([
      Buffer.from((bytes.length + 4).toString(16).padStart(4, '0'), 'latin1'),
      bytes,
    ]);
  };
  const band = (number: number, data: string | Buffer): Buffer =>
    pkt(Buffer.concat([Buffer.from([number]), Buffer.from(data)]));
  const FLUSH = Buffer.from('0000', 'latin1');

  it('asks for one commit, depth 1, with our shallow commits and one have', () => {
    // Prepare
    const request = { want: SHA('a'), have: SHA('b'), shallow: [SHA('c')], depth: 1 };

    // Act
    const body = uploadPackRequest(request, ['thin-pack', 'ofs-delta', 'agent=driftless']);

    // Assess
    assert.equal(
      body.toString('latin1'),
      `0056want ${SHA('a')} thin-pack ofs-delta agent=driftless\n` +
        `0035shallow ${SHA('c')}\n000ddeepen 1\n0000` +
        `0032have ${SHA('b')}\n0009done\n`,
    );
  });

  it('reads refs, peeled tags, HEAD and capabilities of a v0/v1 advertisement, with or without the service line', () => {
    // Prepare
    const refs = Buffer.concat([
      pkt(
        `${SHA('1')} HEAD\0multi_ack thin-pack side-band-64k shallow symref=HEAD:refs/heads/main\n`,
      ),
      pkt(`${SHA('1')} refs/heads/main\n`),
      pkt(`${SHA('2')} refs/tags/v1.0.0\n`),
      pkt(`${SHA('3')} refs/tags/v1.0.0^{}\n`),
      FLUSH,
    ]);
    const withService = Buffer.concat([pkt('# service=git-upload-pack\n'), FLUSH, refs]);
    const empty = Buffer.concat([pkt(`${'0'.repeat(40)} capabilities^{}\0shallow\n`), FLUSH]);
    const v2 = Buffer.concat([pkt('# service=git-upload-pack\n'), FLUSH, pkt('version 2\n')]);

    // Act
    const fromV1 = parseAdvertisement(withService);
    const bare = parseAdvertisement(refs);

    // Assess
    assert.deepEqual(
      [...fromV1.capabilities],
      ['multi_ack', 'thin-pack', 'side-band-64k', 'shallow', 'symref=HEAD:refs/heads/main'],
    );
    assert.deepEqual(fromV1.refs, [
      { ref: 'HEAD', oid: SHA('1'), target: 'refs/heads/main' },
      { ref: 'refs/heads/main', oid: SHA('1') },
      { ref: 'refs/tags/v1.0.0', oid: SHA('2'), peeled: SHA('3') },
    ]);
    assert.deepEqual(bare, fromV1);
    assert.deepEqual(parseAdvertisement(empty).refs, []);
    // Gitea and Forgejo advertise an empty repository with no ref line at all.
    const bareEmpty = Buffer.concat([pkt('# service=git-upload-pack\n'), FLUSH, FLUSH]);
    assert.deepEqual(parseAdvertisement(bareEmpty).refs, []);
    assert.throws(() => parseAdvertisement(v2), UploadPackError);
  });

  it('splits the answer into shallow updates and the side-band-1 pack, skipping progress', () => {
    // Prepare
    const response = Buffer.concat([
      pkt(`shallow ${SHA('a')}\n`),
      pkt(`unshallow ${SHA('b')}\n`),
      FLUSH,
      pkt(`ACK ${SHA('b')}\n`),
      band(2, 'Counting objects: 3\r'),
      band(1, 'PACK'),
      band(1, Buffer.from([0, 1, 2])),
      FLUSH,
    ]);

    // Act
    const result = parseUploadPackResponse(response, true);

    // Assess
    assert.deepEqual(result.shallow, [SHA('a')]);
    assert.deepEqual(result.unshallow, [SHA('b')]);
    assert.deepEqual(result.pack, Buffer.concat([Buffer.from('PACK'), Buffer.from([0, 1, 2])]));
  });

  it("raises the server's errors: an unknown want apart, band 3 as the server put it", () => {
    // Prepare
    const notOurRef = Buffer.concat([pkt(`ERR upload-pack: not our ref ${SHA('f')}`)]);
    const fatal = Buffer.concat([pkt('NAK\n'), band(3, 'fatal: out of memory\n'), FLUSH]);
    const truncated = Buffer.from('00', 'latin1');

    // Act
    const unknown = (): unknown => parseUploadPackResponse(notOurRef, true);
    const failed = (): unknown => parseUploadPackResponse(fatal, true);
    const broken = (): unknown => parseUploadPackResponse(truncated, true);

    // Assess
    assert.throws(unknown, UnknownWantError);
    assert.throws(failed, (error: unknown) => {
      assert.ok(error instanceof UploadPackError && !(error instanceof UnknownWantError));
      assert.equal(error.message, 'the server reported: fatal: out of memory');
      return true;
    });
    assert.throws(broken, UploadPackError);
  });
});

describe('a Git server that quotes the token back', () => {
  afterEach(() => forgetSecretValuesForTests());

  it('never lets it into the fetch result or the status', async () => {
    // Prepare: a server whose ref advertisement is an ERR line holding the token
    const token = `planted-git-token-${Date.now()}`;
    const line = `ERR access denied for x-access-token:${token}\n`;
    const pkt = `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
    const http: HttpClient = {
      request: async ({ url, method }) => ({
        url,
        method: method ?? 'GET',
        statusCode: 200,
        statusMessage: 'OK',
        headers: { 'content-type': 'application/x-git-upload-pack-advertisement' },
        body: (async function* () {
          yield new TextEncoder().encode(pkt);
        })(),
      }),
    };
    const dir = await mkdtemp(join(tmpdir(), 'driftless-git-err-'));
    const store = new FsStore({ path: join(dir, 'store') });
    const source = createGitSource({
      cacheDir: join(dir, 'cache'),
      readSecret: async () => token,
      http,
    });
    const [track] = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/org/app.git, auth: {type: token, secret: env:TOKEN}}]',
      'driftless.yaml',
    ).tracks;

    try {
      // Act
      const fetched = await fetchTrack(
        track!,
        { type: 'fetch', track: 'web', trigger: 'manual' },
        { source, artifacts: store, state: store },
      );

      // Assess: it failed, saying what the server said, without the token
      const state = JSON.stringify(await readTrackState(store, 'web'));
      assert.equal(fetched.result.outcome, 'failed');
      assert.match(fetched.result.error ?? '', /access denied for x-access-token:\*\*\*/);
      assert.ok(!state.includes(token), state);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

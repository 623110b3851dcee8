/**
 * The fetch job's access scope (src/source/job-scope.ts) against the real Git server (git
 * http-backend behind basic auth), with a loopback proxy of our own in front of it that
 * records every request the server is asked and can revoke the credentials (answer 401, as a
 * host does for a revoked token): within one job the resolve's ref advertisement counts for
 * the reads of a cached commit, a new job shows the credentials again, and one track's contact
 * never counts for another track or for other credentials.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Track } from '../../src/config/types.ts';
import { GitAuthError } from '../../src/source/git/errors.ts';
import { createGitSource } from '../../src/source/git/index.ts';
import { JobScope } from '../../src/source/job-scope.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import {
  pushFiles,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { rendererBinaries } from '../harness/renderers.ts';
import { sshSigningKey, type SigningKey } from '../harness/signing.ts';

/** A proxy in front of the Git server: records `METHOD path?query status`, refuses when revoked. */
interface CountingProxy {
  readonly url: string;
  /** The requests answered since the last {@link CountingProxy.clear}. */
  readonly requests: string[];
  clear(): void;
  /** From now on (until restored) every request is answered 401, as for a revoked token. */
  setRevoked(revoked: boolean): void;
  stop(): Promise<void>;
}

async function startCountingProxy(target: string): Promise<CountingProxy> {
  const origin = new URL(target);
  const requests: string[] = [];
  let revoked = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const record = (status: number): void => {
      requests.push(`${req.method} ${req.url} ${status}`);
    };
    if (revoked) {
      record(401);
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="revoked"' }).end('Bad credentials\n');
      return;
    }
    const upstream = request(
      {
        hostname: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: origin.host },
      },
      (answer) => {
        record(answer.statusCode ?? 502);
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    clear: () => requests.splice(0),
    setRevoked: (value) => (revoked = value),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {value: "1"}\n`;

describe('the fetch job and the shared Git cache', () => {
  let server: GitServer;
  let proxy: CountingProxy;
  let signing: SigningKey;
  let workDir: string;
  let repositoryCount = 0;
  /** The secrets tracks read, by `env:` name; a test may change one (a password changed). */
  const secrets = new Map<string, string>();
  let rightCredentials: string;

  before(async () => {
    const [started, key, tools] = await Promise.all([
      startGitServer(),
      sshSigningKey('ed25519'),
      rendererBinaries(),
    ]);
    server = started;
    signing = key;
    process.env.DRIFTLESS_KUSTOMIZE = tools.kustomize;
    proxy = await startCountingProxy(server.url);
    workDir = await mkdtemp(join(tmpdir(), 'driftless-access-scope-'));
    rightCredentials = `${server.username}:${server.password}`;
    secrets.set('SIGNING_KEYS', signing.publicKey);
  });

  after(async () => {
    await proxy.stop();
    await server.stop();
    await signing.dispose();
    await rm(workDir, { recursive: true, force: true });
  });

  /** A repository behind the proxy holding one signed commit: plain manifests and a kustomization. */
  async function signedRepository(): Promise<{
    repository: GitRepository;
    url: string;
    path: string;
    sha: string;
  }> {
    repositoryCount += 1;
    const repository = await server.createRepository(`org/scoped-${repositoryCount}`);
    const sha = await pushFiles(
      repository,
      {
        'plain/settings.yaml': configMap('plain'),
        'kust/kustomization.yaml': 'resources: [settings.yaml]\n',
        'kust/settings.yaml': configMap('kust'),
      },
      { commitConfig: signing.commitConfig, commitEnv: signing.commitEnv },
    );
    const path = new URL(repository.url).pathname;
    return { repository, url: `${proxy.url}${path}`, path, sha };
  }

  function tracksOf(url: string, ...lines: string[]): Map<string, Track> {
    const yaml = `tracks:\n${lines.map((line) => `  - {repository: "${url}", ${line}}`).join('\n')}\n`;
    const tracks = parseConfig(yaml, 'driftless.yaml').tracks;
    return new Map(tracks.map((track) => [track.name, track]));
  }

  function newSource(): GitSource {
    return createGitSource({
      cacheDir: join(workDir, `cache-${repositoryCount}`),
      readSecret: async (ref: SecretRef) => {
        const value = ref.scheme === 'env' ? secrets.get(ref.name) : undefined;
        if (value === undefined) throw new Error(`no secret ${JSON.stringify(ref)}`);
        return value;
      },
    });
  }

  /** The state and artifact store of one test. */
  function newStore(): FsStore {
    return new FsStore({ path: join(workDir, `store-${repositoryCount}`) });
  }

  const fetchJob = (
    track: Track,
    source: GitSource,
    store: FsStore,
  ): ReturnType<typeof fetchTrack> =>
    fetchTrack(
      track,
      { type: 'fetch', track: track.name, trigger: 'manual' },
      { source, artifacts: store, state: store },
    );

  it('asks for the ref advertisement once per fetch job: nothing more for a cached commit (plain, kustomize, signed), only the fetch for a new one', async () => {
    // Prepare: another track of the URL has brought the commit into the shared cache
    secrets.set('GIT_CREDENTIALS', rightCredentials);
    const { repository, url, path, sha } = await signedRepository();
    const auth = 'auth: {type: basic, secret: env:GIT_CREDENTIALS}';
    const tracks = tracksOf(
      url,
      `name: warm, subPath: plain, ${auth}`,
      `name: plain, subPath: plain, ${auth}`,
      `name: kustomized, subPath: kust, ${auth}`,
      `name: signed, subPath: plain, verify: {keys: [env:SIGNING_KEYS]}, ${auth}`,
    );
    const source = newSource();
    const store = newStore();
    assert.equal((await fetchJob(tracks.get('warm')!, source, store)).result.outcome, 'fetched');
    const advertisement = `GET ${path}/info/refs?service=git-upload-pack 200`;

    // Act: one fetch job per track, each rendering the cached commit
    const requests: Record<string, string[]> = {};
    for (const name of ['plain', 'kustomized', 'signed']) {
      proxy.clear();
      const { result } = await fetchJob(tracks.get(name)!, source, store);
      assert.deepEqual(
        { outcome: result.outcome, revision: result.revision },
        { outcome: 'fetched', revision: sha },
        `${name}: ${result.error}`,
      );
      requests[name] = [...proxy.requests];
    }
    // A new commit, not in the cache yet: the kustomize track fetches it once and reads it twice
    const newer = await pushFiles(repository, { 'kust/settings.yaml': configMap('newer') });
    proxy.clear();
    const { result } = await fetchJob(tracks.get('kustomized')!, source, store);
    assert.equal(result.revision, newer, result.error);
    requests['kustomized, new commit'] = [...proxy.requests];

    // Assess: the resolve's advertisement reached the server with the track's credentials,
    // and the reads of the commit (twice for kustomize) and the signature check rely on it
    assert.deepEqual(requests, {
      plain: [advertisement],
      kustomized: [advertisement],
      signed: [advertisement],
      'kustomized, new commit': [advertisement, `POST ${path}/git-upload-pack 200`],
    });
  });

  it('notices revoked credentials on the next job of a track pinned to a cached commit', async () => {
    // Prepare: a job of the track reads the commit
    secrets.set('GIT_CREDENTIALS', rightCredentials);
    const { url, sha } = await signedRepository();
    const track = tracksOf(
      url,
      `name: pinned, reference: "${sha}", subPath: kust, auth: {type: basic, secret: env:GIT_CREDENTIALS}`,
    ).get('pinned')!;
    const source = newSource();
    const store = newStore();
    assert.equal((await fetchJob(track, source, store)).result.outcome, 'fetched');

    // Act: the credentials are revoked; the next job finds the commit in the cache
    proxy.setRevoked(true);
    let fetched;
    try {
      fetched = await fetchJob(track, source, store);
    } finally {
      proxy.setRevoked(false);
    }

    // Assess
    assert.equal(fetched.result.outcome, 'failed');
    assert.equal(
      fetched.result.error,
      `track "pinned": authentication failed for ${url} (check the track's auth secret)`,
    );
    const filesFetched = conditionOf(await readTrackState(store, 'pinned'), 'FilesFetched');
    assert.deepEqual(
      { status: filesFetched?.status, reason: filesFetched?.reason },
      { status: 'False', reason: 'GIT_AUTH_FAILED' },
    );
  });

  it("never counts one track's contact for another track, or for other credentials", async () => {
    // Prepare: track A's job reads the commit; B has a wrong password
    secrets.set('GIT_CREDENTIALS', rightCredentials);
    secrets.set('GIT_WRONG', `${server.username}:wrong-password`);
    const { url, sha } = await signedRepository();
    const tracks = tracksOf(
      url,
      `name: track-a, reference: "${sha}", subPath: plain, auth: {type: basic, secret: env:GIT_CREDENTIALS}`,
      `name: track-b, reference: "${sha}", subPath: plain, auth: {type: basic, secret: env:GIT_WRONG}`,
    );
    const [a, b] = [tracks.get('track-a')!, tracks.get('track-b')!];
    const source = newSource();
    const store = newStore();
    assert.equal((await fetchJob(a, source, store)).result.outcome, 'fetched');
    const outcome = (read: Promise<unknown>): Promise<unknown> =>
      read.then(
        () => 'read',
        (error: unknown) => error,
      );

    // Act: B's job right after A's; then one scope (wrongly) shared by A's resolve, B's read
    // of the commit, and A's read once its password has changed
    const jobB = await fetchJob(b, source, store);
    const shared = new JobScope();
    await source.resolve(a, { job: shared });
    const readB = await outcome(source.readFiles(b, sha, 'manifests', { job: shared }));
    secrets.set('GIT_CREDENTIALS', `${server.username}:changed-password`);
    const readChanged = await outcome(source.readFiles(a, sha, 'manifests', { job: shared }));

    // Assess
    assert.equal(jobB.result.outcome, 'failed');
    assert.equal(
      jobB.result.error,
      `track "track-b": authentication failed for ${url} (check the track's auth secret)`,
    );
    for (const [read, track] of [
      [readB, 'track-b'],
      [readChanged, 'track-a'],
    ] as const) {
      assert.ok(read instanceof GitAuthError, `${track}: ${String(read)}`);
      assert.equal(
        read.message,
        `track "${track}": authentication failed for ${url} (check the track's auth secret)`,
      );
    }
  });
});

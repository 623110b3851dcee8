/**
 * Fetching a 500-file repository from the test Git server: driftless' Git
 * source (`resolve` + `readFiles` into a fresh cache directory; see
 * docs/git-source.md) against `git clone --depth 1`; then the incremental fetch of
 * the next commit (one file changed) into the cache the fresh fetch left,
 * against that fresh fetch (the goal) and against `git fetch --depth 1` in
 * the clone (for scale).
 *
 * Then the same repository over SSH, from a real sshd (Debian's
 * openssh-server) on loopback: driftless' SSH transport (ssh2) against the git
 * CLI with OpenSSH's `ssh` to the same sshd, fresh and incremental.
 */
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import httpNode from 'isomorphic-git/http/node';
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { createGitSource } from '../src/source/git/index.ts';
import type { SecretRef } from '../src/config/secret-ref.ts';
import type { TrackSource } from '../src/source/ports.ts';
import { pushFiles, runGit, type GitRepository } from '../test/harness/git-server.ts';
import { sshKey, startSshd } from '../test/harness/sshd.ts';
import type { BenchContext } from './lib/context.ts';
import { benchObjects, manifestFiles } from './lib/manifests.ts';
import { rotated, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

export const gitFetch: Benchmark = {
  name: 'git-fetch',
  title: 'Git source fetch of a 500-file repository',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(500);
    const git = await ctx.git();
    const repository = await git.createRepository(`fetch-${randomBytes(3).toString('hex')}`);
    await pushFiles(repository, manifestFiles(benchObjects(count)), { message: `${count} files` });
    const track: TrackSource = {
      name: 'fetch',
      repository: repository.url,
      reference: 'main',
      auth: { type: 'basic', secret: { scheme: 'env', name: 'UNUSED' } },
    };
    const readSecret = async (): Promise<string> => `${repository.username}:${repository.password}`;
    const exchanges = exchangeTimer();
    /** resolve + readFiles with a new source (no in-memory state) over `cacheDir`. */
    const fetchWith = async (cacheDir: string): Promise<number> => {
      const source = createGitSource({ cacheDir, readSecret, http: exchanges.http });
      const { revision } = await source.resolve(track);
      return (await source.readFiles(track, revision)).length;
    };
    /** fetchWith's time, and the part of it not spent in exchanges with the server. */
    const measureFetch = async (cacheDir: string) => {
      const before = exchanges.ms;
      const { ms, value } = await timed(() => fetchWith(cacheDir));
      return { ms, value, ownMs: ms - (exchanges.ms - before) };
    };

    const fresh: number[] = [];
    const freshOwn: number[] = [];
    const clone: number[] = [];
    const incremental: number[] = [];
    const incrementalOwn: number[] = [];
    const gitIncremental: number[] = [];
    let wrongCounts = 0;
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      const cacheDir = await ctx.scratch(`git-fetch-cache-${run}`);
      const cloneDir = join(await ctx.scratch(`git-fetch-clone-${run}`), 'repo');
      await rotated(run, [
        async () => {
          const { ms, value, ownMs } = await measureFetch(cacheDir);
          if (value !== count) wrongCounts++;
          if (measured) fresh.push(ms);
          if (measured) freshOwn.push(ownMs);
        },
        async () => {
          const { ms } = await timed(() =>
            runGit(['clone', '--quiet', '--depth', '1', repository.url, cloneDir], {
              credentials: repository,
            }),
          );
          if (measured) clone.push(ms);
        },
      ]);
      // The next commit changes one file; the cache the fresh fetch left has its parent.
      const changed = benchObjects(1, undefined, run + 1)[0];
      await pushFiles(repository, manifestFiles(changed ? [changed] : []), {
        message: `change one file (${run})`,
      });
      await rotated(run, [
        async () => {
          const { ms, value, ownMs } = await measureFetch(cacheDir);
          if (value !== count) wrongCounts++;
          if (measured) incremental.push(ms);
          if (measured) incrementalOwn.push(ownMs);
        },
        async () => {
          const { ms } = await timed(() =>
            runGit(['-C', cloneDir, 'fetch', '--quiet', '--depth', '1', 'origin', 'main'], {
              credentials: repository,
            }),
          );
          if (measured) gitIncremental.push(ms);
        },
      ]);
      process.stderr.write(`# git-fetch run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }
    const sanity = wrongCounts > 0 ? [`${wrongCounts} fetches did not read ${count} files`] : [];
    const overSsh = await sshFetches(ctx, repository, count);
    return [
      {
        metric: `fresh fetch, ${count} files`,
        unit: 'ms',
        runs: fresh,
        peer: { label: 'git clone --depth 1', runs: clone },
        goal: { maxRatio: 1.5 },
        notes: [
          'driftless = resolve (ref advertisement) + shallow fetch into an empty cache + reading every file of the tree, with a new source each time; git = the whole clone process incl. checkout',
          ...sanity,
        ],
      },
      {
        metric: 'incremental fetch, next commit (1 file changed)',
        unit: 'ms',
        runs: incremental,
        peer: { label: 'fresh fetch (driftless)', runs: fresh },
        goal: { maxRatio: 0.5 },
        notes: [
          'a new source over the cache the fresh fetch of the same run left, as a later process would find it',
        ],
      },
      {
        metric: 'incremental fetch, next commit: time outside the server exchanges',
        unit: 'ms',
        runs: incrementalOwn,
        peer: { label: 'the same for the fresh fetch', runs: freshOwn },
        notes: [
          "each fetch's time less the time its two HTTP exchanges with the Git server took (request sent to answer read; the test server spawns git processes for each): what driftless itself does, which is what an incremental fetch can save",
        ],
      },
      {
        metric: 'incremental fetch vs git fetch, next commit',
        unit: 'ms',
        runs: incremental,
        peer: { label: 'git fetch --depth 1 (in the clone)', runs: gitIncremental },
        notes: [
          'for scale: the same next commit fetched by the git CLI into the clone of the same run (no checkout)',
        ],
      },
      ...overSsh,
    ];
  },
};

/**
 * The fresh and incremental fetches over SSH: driftless' SSH transport
 * against `git clone --depth 1` / `git fetch --depth 1` through OpenSSH's
 * `ssh`, both to the same sshd with the same ed25519 deploy key and a
 * checked host key.
 */
async function sshFetches(
  ctx: BenchContext,
  repository: GitRepository,
  count: number,
): Promise<Measurement[]> {
  const key = await sshKey('ed25519');
  const sshd = await startSshd([key.publicKey]);
  try {
    const dir = await ctx.scratch('git-fetch-ssh');
    const keyFile = join(dir, 'deploy_key');
    const knownHostsFile = join(dir, 'known_hosts');
    await writeFile(keyFile, key.privateKey);
    await chmod(keyFile, 0o600);
    await writeFile(knownHostsFile, `${sshd.knownHostsLine}\n`);
    const url = sshd.urlOf(repository.bareDir);
    const gitEnv = {
      GIT_SSH_COMMAND: `ssh -i ${keyFile} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${knownHostsFile}`,
    };
    const track: TrackSource = {
      name: 'fetch-ssh',
      repository: url,
      reference: 'main',
      auth: {
        type: 'ssh',
        secret: { scheme: 'env', name: 'DEPLOY_KEY' },
        knownHosts: { scheme: 'env', name: 'KNOWN_HOSTS' },
      },
    };
    const secrets: Record<string, string> = {
      DEPLOY_KEY: key.privateKey,
      KNOWN_HOSTS: sshd.knownHostsLine,
    };
    const readSecret = async (ref: SecretRef): Promise<string> =>
      ref.scheme === 'env' ? secrets[ref.name]! : '';
    const fetchWith = async (cacheDir: string): Promise<number> => {
      const source = createGitSource({ cacheDir, readSecret });
      const { revision } = await source.resolve(track);
      return (await source.readFiles(track, revision)).length;
    };

    const fresh: number[] = [];
    const clone: number[] = [];
    const incremental: number[] = [];
    const gitIncremental: number[] = [];
    let wrongCounts = 0;
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      const cacheDir = await ctx.scratch(`git-fetch-ssh-cache-${run}`);
      const cloneDir = join(await ctx.scratch(`git-fetch-ssh-clone-${run}`), 'repo');
      await rotated(run, [
        async () => {
          const { ms, value } = await timed(() => fetchWith(cacheDir));
          if (value !== count) wrongCounts++;
          if (measured) fresh.push(ms);
        },
        async () => {
          const { ms } = await timed(() =>
            runGit(['clone', '--quiet', '--depth', '1', url, cloneDir], { env: gitEnv }),
          );
          if (measured) clone.push(ms);
        },
      ]);
      const changed = benchObjects(1, undefined, 1000 + run)[0];
      await pushFiles(repository, manifestFiles(changed ? [changed] : []), {
        message: `change one file over SSH (${run})`,
      });
      await rotated(run, [
        async () => {
          const { ms, value } = await timed(() => fetchWith(cacheDir));
          if (value !== count) wrongCounts++;
          if (measured) incremental.push(ms);
        },
        async () => {
          const { ms } = await timed(() =>
            runGit(['-C', cloneDir, 'fetch', '--quiet', '--depth', '1', 'origin', 'main'], {
              env: gitEnv,
            }),
          );
          if (measured) gitIncremental.push(ms);
        },
      ]);
      process.stderr.write(`# git-fetch over SSH run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }
    const sanity =
      wrongCounts > 0 ? [`${wrongCounts} SSH fetches did not read ${count} files`] : [];
    return [
      {
        metric: `fresh fetch over SSH, ${count} files`,
        unit: 'ms',
        runs: fresh,
        peer: { label: 'git clone --depth 1 over SSH', runs: clone },
        goal: { maxRatio: 1.5 },
        notes: [
          "driftless = resolve + shallow fetch + reading every file, each its own SSH connection (ssh2, JavaScript crypto), host key checked; git = the whole clone through OpenSSH's ssh, incl. checkout; both to the same loopback sshd with the same ed25519 key",
          ...sanity,
        ],
      },
      {
        metric: 'incremental fetch over SSH, next commit (1 file changed)',
        unit: 'ms',
        runs: incremental,
        peer: { label: 'git fetch --depth 1 over SSH (in the clone)', runs: gitIncremental },
        goal: { maxRatio: 1.5 },
        notes: [
          'a new source over the cache the fresh SSH fetch of the same run left; the peer fetches the same commit into the clone of the same run (stricter than comparing with a clone)',
        ],
      },
    ];
  } finally {
    await sshd.stop();
  }
}

/**
 * An isomorphic-git HTTP client that adds up how long its exchanges take:
 * from sending a request to having read its whole answer.
 */
function exchangeTimer(): { http: HttpClient; readonly ms: number } {
  let ms = 0;
  const http: HttpClient = {
    async request(request: GitHttpRequest): Promise<GitHttpResponse> {
      const start = performance.now();
      const response = await httpNode.request(request);
      const chunks: Uint8Array[] = [];
      for await (const chunk of response.body ?? []) chunks.push(chunk);
      ms += performance.now() - start;
      return {
        ...response,
        body: (async function* () {
          yield* chunks;
        })(),
      };
    },
  };
  return {
    http,
    get ms() {
      return ms;
    },
  };
}

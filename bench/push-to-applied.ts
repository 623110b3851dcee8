/**
 * Push-to-applied through the local stack: `startServe` in this process (fs
 * store, the test Git server, the test cluster), a signed GitHub push
 * webhook posted over HTTP, timed until the track's appliedRevision is the
 * pushed commit — against `git clone --depth 1 && kubectl apply
 * --server-side` of the same commit into a namespace of its own.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { openLocalContext } from '../src/sync/local-context.ts';
import { silentLogger } from '../src/logger.ts';
import { startServe } from '../src/serve/start-serve.ts';
import { readTrackState } from '../src/sync/track-state.ts';
import { pushFiles, runGit, type GitRepository } from '../test/harness/git-server.ts';
import type { BenchContext } from './lib/context.ts';
import { benchEnv, writeBenchConfig } from './lib/driftless-config.ts';
import { kubectlFor } from './lib/kubectl.ts';
import { benchObjects, manifestFiles } from './lib/manifests.ts';
import { rotated, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACK = 'push';
const APPLIED_TIMEOUT_MS = 180_000;

/** A push delivery as GitHub signs it. */
function githubPush(
  repository: GitRepository,
  before: string,
  after: string,
  secret: string,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    before,
    after,
    repository: {
      clone_url: repository.url,
      html_url: repository.url.replace(/\.git$/, ''),
      default_branch: 'main',
    },
  });
  const signature = createHmac('sha256', secret).update(body).digest('hex');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${signature}`,
    },
  };
}

export const pushToApplied: Benchmark = {
  name: 'push-to-applied',
  title: 'Push-to-applied for 500 objects through the local stack',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(500);
    const git = await ctx.git();
    const repository = await git.createRepository(`push-${randomBytes(3).toString('hex')}`);
    const { kubeconfig } = await ctx.kubectl();
    const kubectl = await kubectlFor(ctx);
    const driftlessNs = await ctx.namespace('push-d');
    const kubectlNs = await ctx.namespace('push-k');
    const dir = await ctx.scratch('push-to-applied');
    const secret = randomBytes(16).toString('hex');
    const env = benchEnv(repository, secret);
    const configFile = await writeBenchConfig({
      dir,
      kubeconfigPath: kubeconfig,
      track: TRACK,
      repository,
      namespace: driftlessNs,
    });
    const cli = await openLocalContext(configFile, env);
    const serve = await startServe(cli, {
      port: 0,
      host: '127.0.0.1',
      env,
      logger: silentLogger,
      runAtStart: false,
    });

    const driftlessRuns: number[] = [];
    const peerRuns: number[] = [];
    let before = '0'.repeat(40);
    try {
      // Run 0 (warm-up, not counted) creates the objects on both sides; each
      // measured run pushes a commit that changes every one of them.
      for (let run = 0; run <= ctx.runs; run++) {
        const measured = run > 0;
        const sha = await pushFiles(
          repository,
          manifestFiles(benchObjects(count, undefined, run)),
          {
            message: `revision ${run}`,
          },
        );
        const delivery = githubPush(repository, before, sha, secret);
        before = sha;
        const clone = join(dir, `clone-${run}`);
        await rotated(run, [
          async () => {
            const { ms } = await timed(async () => {
              const response = await fetch(`${serve.url}/webhook/github`, {
                method: 'POST',
                body: delivery.body,
                headers: delivery.headers,
              });
              if (response.status !== 202) {
                throw new Error(`webhook answered ${response.status}: ${await response.text()}`);
              }
              await appliedRevision(() => readTrackState(cli.state, TRACK), sha);
            });
            if (measured) driftlessRuns.push(ms);
          },
          async () => {
            const { ms } = await timed(async () => {
              await runGit(['clone', '--quiet', '--depth', '1', repository.url, clone], {
                credentials: repository,
              });
              await kubectl(['apply', '--server-side', '-n', kubectlNs, '-f', `${clone}/`]);
            });
            if (measured) peerRuns.push(ms);
          },
        ]);
        process.stderr.write(`# push-to-applied run ${run}${measured ? '' : ' (warm-up)'} done\n`);
      }
    } finally {
      await serve.close();
      cli.close();
    }
    return [
      {
        metric: `push-to-applied, ${count} objects`,
        unit: 'ms',
        runs: driftlessRuns,
        peer: { label: 'git clone --depth 1 && kubectl apply --server-side', runs: peerRuns },
        goal: { max: 2000, maxRatio: 0.5 },
        notes: [
          'driftless = webhook POST -> 202 -> fetch job (ref advertisement, shallow incremental fetch, render, fs artifact) -> sync job (SSA of every object, status) -> appliedRevision seen (polled every 10 ms); every object changes in each measured run',
        ],
      },
    ];
  },
};

/** Resolves once the track's appliedRevision is `sha`; throws after a generous timeout. */
async function appliedRevision(
  read: () => Promise<{ appliedRevision?: string | null | undefined }>,
  sha: string,
): Promise<void> {
  const deadline = Date.now() + APPLIED_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if ((await read()).appliedRevision === sha) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`revision ${sha} was not applied within ${APPLIED_TIMEOUT_MS} ms`);
}

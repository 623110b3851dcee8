/**
 * A driftless.yaml for one track on the test cluster, from the test Git
 * server or a repository on this machine, with an fs store.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitRepository } from '../../test/harness/git-server.ts';

/** Where the config's `env:` secrets come from; see {@link benchEnv}. */
const CREDENTIALS_VARIABLE = 'BENCH_GIT_CREDENTIALS';
const WEBHOOK_VARIABLE = 'BENCH_GITHUB_SECRET';

export interface BenchConfigOptions {
  /** Holds driftless.yaml and the fs store. */
  readonly dir: string;
  readonly kubeconfigPath: string;
  readonly track: string;
  /** The test Git server's repository (basic auth from {@link benchEnv}), or a local path. */
  readonly repository: GitRepository | string;
  readonly namespace: string;
}

/** Writes `dir/driftless.yaml` and returns its path. */
export async function writeBenchConfig(options: BenchConfigOptions): Promise<string> {
  const path = join(options.dir, 'driftless.yaml');
  const repository = options.repository;
  await writeFile(
    path,
    [
      'store:',
      '  type: fs',
      `  path: ${join(options.dir, 'store')}`,
      'clusters:',
      '  - name: bench',
      `    kubeconfig: ${options.kubeconfigPath}`,
      'webhooks:',
      `  github: {secret: env:${WEBHOOK_VARIABLE}}`,
      'tracks:',
      `  - name: ${options.track}`,
      `    repository: ${typeof repository === 'string' ? repository : repository.url}`,
      `    namespace: ${options.namespace}`,
      // Only the measured trigger may deploy: a scheduled poll would race it.
      '    interval: 1h',
      ...(typeof repository === 'string'
        ? []
        : [`    auth: {type: basic, secret: env:${CREDENTIALS_VARIABLE}}`]),
      '',
    ].join('\n'),
  );
  return path;
}

/** The environment the config's secrets resolve from. */
export function benchEnv(repository: GitRepository, webhookSecret: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    [CREDENTIALS_VARIABLE]: `${repository.username}:${repository.password}`,
    [WEBHOOK_VARIABLE]: webhookSecret,
  };
}

/** A driftless.yaml for one track on the test cluster and Git server, with an fs store. */
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
  readonly repository: GitRepository;
  readonly namespace: string;
}

/** Writes `dir/driftless.yaml` and returns its path. */
export async function writeBenchConfig(options: BenchConfigOptions): Promise<string> {
  const path = join(options.dir, 'driftless.yaml');
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
      `    repository: ${options.repository.url}`,
      `    namespace: ${options.namespace}`,
      // Only the measured trigger may deploy: a scheduled poll would race it.
      '    interval: 1h',
      `    auth: {type: basic, secret: env:${CREDENTIALS_VARIABLE}}`,
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

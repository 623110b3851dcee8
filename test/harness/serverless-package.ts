/**
 * `npx serverless package` of this service, the way the packaging test and
 * the template checks run it: no AWS credentials of any kind (packaging must
 * not need AWS), stage `test`, the CloudFormation template read back.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './testbin.ts';

const run = promisify(execFile);

/** The template `serverless package` writes into its `--package` folder. */
export const UPDATE_TEMPLATE = 'cloudformation-template-update-stack.json';

export interface PackageOptions {
  /** `--param config=`: a path relative to the checkout (the package patterns name it so). */
  readonly config: string;
  /** `--package`: where the zips and templates go. */
  readonly into: string;
  /** Where the empty AWS config and credentials files are pointed. */
  readonly scratch: string;
  /** `--param esbuildWorkFolder=`, relative to the checkout: a build folder of the caller's own. */
  readonly esbuildWorkFolder?: string;
}

/** Packages the service; throws with the packager's output when it fails. Returns the template. */
export async function packageService(options: PackageOptions): Promise<Record<string, unknown>> {
  const env: NodeJS.ProcessEnv = { ...process.env, SLS_TELEMETRY_DISABLED: '1' };
  for (const name of Object.keys(env)) {
    if (/^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|PROFILE|DEFAULT_PROFILE)$/.test(name))
      delete env[name];
  }
  env.AWS_CONFIG_FILE = join(options.scratch, 'no-aws-config');
  env.AWS_SHARED_CREDENTIALS_FILE = join(options.scratch, 'no-aws-credentials');
  const args = ['serverless', 'package', '--package', options.into];
  args.push('--param', `config=${options.config}`, '--stage', 'test');
  if (options.esbuildWorkFolder !== undefined) {
    args.push('--param', `esbuildWorkFolder=${options.esbuildWorkFolder}`);
  }
  // The first run builds kustomize and helm for linux/arm64 (minutes); later runs find the cache.
  await run('npx', args, {
    cwd: REPO_ROOT,
    env,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 20 * 60_000,
  }).catch((error: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(
      `serverless package (${options.config}) failed: ${error.stdout}\n${error.stderr}`,
    );
  });
  return JSON.parse(await readFile(join(options.into, UPDATE_TEMPLATE), 'utf8'));
}

/**
 * Finds the control-plane binaries the test cluster runs.
 *
 * envtest's variables win when set (`TEST_ASSET_<NAME>` for one binary,
 * `KUBEBUILDER_ASSETS` for a directory of them); whatever they do not provide
 * is built from the pinned Go wrapper modules by `test/testbin/build.sh`,
 * which caches the result outside the checkout.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file so any working directory works. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const BUILD_SCRIPT = join(REPO_ROOT, 'test/testbin/build.sh');

export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  readonly etcd: string;
  readonly kubeControllerManager: string;
  readonly kubectl: string;
}

type BinaryName = 'kube-apiserver' | 'etcd' | 'kube-controller-manager' | 'kubectl';

/** Which build.sh component produces each binary. */
const COMPONENT_OF: Record<BinaryName, 'kubernetes' | 'etcd'> = {
  'kube-apiserver': 'kubernetes',
  etcd: 'etcd',
  'kube-controller-manager': 'kubernetes',
  kubectl: 'kubernetes',
};

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binary `variable` names in `env`, or undefined when it is unset; throws when it names no executable. */
export function binaryFromVariable(variable: string, env: NodeJS.ProcessEnv): string | undefined {
  const explicit = env[variable];
  if (!explicit) return undefined;
  if (!isExecutable(explicit)) throw new Error(`${variable}=${explicit} is not an executable file`);
  return explicit;
}

/** The binary envtest's variables point at, or undefined when they name none. */
function fromEnvtestVariables(name: BinaryName, env: NodeJS.ProcessEnv): string | undefined {
  const explicit = binaryFromVariable(`TEST_ASSET_${name.toUpperCase().replaceAll('-', '_')}`, env);
  if (explicit) return explicit;
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, name))) return join(assets, name);
  return undefined;
}

/**
 * Runs a build script of pinned Go binaries (test/testbin/build.sh,
 * infra/renderers/build.sh) with `args` and returns the `<name>=<path>` lines
 * it prints. A first build takes minutes: its progress (stderr) is passed on
 * so the wait explains itself, and kept for the error message if it fails.
 */
export function runBuildScript(
  script: string,
  args: readonly string[],
): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-8192);
      process.stderr.write(chunk);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`bash ${script} ${args.join(' ')} failed (exit ${code}):\n${stderr}`));
        return;
      }
      const printed = new Map<string, string>();
      for (const line of stdout.split('\n')) {
        const at = line.indexOf('=');
        if (at > 0) printed.set(line.slice(0, at), line.slice(at + 1).trim());
      }
      resolve(printed);
    });
  });
}

/** Runs build.sh for `components` and returns the directory of each. */
export function buildComponents(components: readonly string[]): Promise<Map<string, string>> {
  return runBuildScript(BUILD_SCRIPT, components);
}

/** Resolves every control-plane binary, building only what envtest's variables leave out. */
export async function controlPlaneBinaries(
  env: NodeJS.ProcessEnv = process.env,
): Promise<ControlPlaneBinaries> {
  const names: BinaryName[] = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kubectl'];
  const found = new Map<BinaryName, string>();
  for (const name of names) {
    const path = fromEnvtestVariables(name, env);
    if (path) found.set(name, path);
  }
  const missing = names.filter((name) => !found.has(name));
  if (missing.length > 0) {
    const components = [...new Set(missing.map((name) => COMPONENT_OF[name]))];
    const dirs = await buildComponents(components);
    for (const name of missing) {
      const dir = dirs.get(COMPONENT_OF[name]);
      if (!dir) throw new Error(`build.sh printed no directory for ${COMPONENT_OF[name]}`);
      found.set(name, join(dir, name));
    }
  }
  const get = (name: BinaryName): string => found.get(name) as string;
  return {
    kubeApiserver: get('kube-apiserver'),
    etcd: get('etcd'),
    kubeControllerManager: get('kube-controller-manager'),
    kubectl: get('kubectl'),
  };
}

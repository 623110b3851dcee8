/**
 * Finds the control-plane binaries the test cluster runs.
 *
 * envtest's variables win when set (`TEST_ASSET_<NAME>` for one binary,
 * `KUBEBUILDER_ASSETS` for a directory of them); whatever they do not provide
 * is built from the pinned Go wrapper modules by `test/testbin/build.sh`,
 * which caches the result outside the checkout.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

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

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binary envtest's variables point at, or undefined when they name none. */
function fromEnvtestVariables(name: BinaryName, env: NodeJS.ProcessEnv): string | undefined {
  const variable = `TEST_ASSET_${name.toUpperCase().replaceAll('-', '_')}`;
  const explicit = env[variable];
  if (explicit) {
    if (!isExecutable(explicit))
      throw new Error(`${variable}=${explicit} is not an executable file`);
    return explicit;
  }
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, name))) return join(assets, name);
  return undefined;
}

/** Runs build.sh for `components` and returns the directory of each. */
export async function buildComponents(components: readonly string[]): Promise<Map<string, string>> {
  const { stdout } = await execFileAsync('bash', [BUILD_SCRIPT, ...components], {
    maxBuffer: 1024 * 1024,
    // The first build takes minutes; its progress belongs on our stderr.
  }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(
      `building test binaries failed (bash ${BUILD_SCRIPT} ${components.join(' ')}):\n${error.stderr ?? error.message}`,
    );
  });
  const dirs = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) dirs.set(line.slice(0, at), line.slice(at + 1));
  }
  return dirs;
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

/**
 * Finds the real kustomize, helm and sops that rendering and decryption
 * tests run.
 *
 * `DRIFTLESS_KUSTOMIZE` / `DRIFTLESS_HELM` / `DRIFTLESS_SOPS` win when set: they are the
 * variables the product itself reads (src/render/renderer-binaries.ts).
 * Whatever they do not provide is built for this host from the pinned
 * wrapper Go modules by `infra/renderers/build.sh`, which caches the result
 * outside the checkout.
 */
import { join } from 'node:path';
import { binaryFromVariable, isExecutable, REPO_ROOT, runBuildScript } from './testbin.ts';

const BUILD_SCRIPT = join(REPO_ROOT, 'infra/renderers/build.sh');

export interface RendererBinaries {
  /** Absolute path of the kustomize binary. */
  readonly kustomize: string;
  /** Absolute path of the helm binary. */
  readonly helm: string;
  /** Absolute path of the sops binary. */
  readonly sops: string;
}

type RendererName = keyof RendererBinaries;

const VARIABLE: Record<RendererName, string> = {
  kustomize: 'DRIFTLESS_KUSTOMIZE',
  helm: 'DRIFTLESS_HELM',
  sops: 'DRIFTLESS_SOPS',
};

/** Resolves the three, building only what the variables leave out. */
export async function rendererBinaries(
  env: NodeJS.ProcessEnv = process.env,
): Promise<RendererBinaries> {
  const names: RendererName[] = ['kustomize', 'helm', 'sops'];
  const found = new Map<RendererName, string>();
  for (const name of names) {
    const path = binaryFromVariable(VARIABLE[name], env);
    if (path) found.set(name, path);
  }
  const missing = names.filter((name) => !found.has(name));
  if (missing.length > 0) {
    const built = await runBuildScript(BUILD_SCRIPT, missing);
    for (const name of missing) {
      const path = built.get(name);
      if (!path || !isExecutable(path)) {
        throw new Error(
          `${BUILD_SCRIPT} reported ${path ?? 'no path'} for ${name}: not executable`,
        );
      }
      found.set(name, path);
    }
  }
  return {
    kustomize: found.get('kustomize') as string,
    helm: found.get('helm') as string,
    sops: found.get('sops') as string,
  };
}

/** The environment that points the product (CLI, serve, fetch, apply) at these binaries. */
export function rendererEnvironment(binaries: RendererBinaries): Record<string, string> {
  return {
    [VARIABLE.kustomize]: binaries.kustomize,
    [VARIABLE.helm]: binaries.helm,
    [VARIABLE.sops]: binaries.sops,
  };
}

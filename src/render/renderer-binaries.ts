/**
 * Where the renderer binaries are. One lookup for every place that renders
 * or decrypts (CLI, serve, the fetch and apply functions):
 *
 * 1. `DRIFTLESS_KUSTOMIZE` / `DRIFTLESS_HELM` / `DRIFTLESS_SOPS`: an explicit
 *    path (the functions set them to their layer's `/opt/bin/...`);
 * 2. the binary's name on `PATH`.
 *
 * `npm run renderers` builds the pinned versions (infra/renderers/).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { RendererNotFoundError } from './errors.ts';

export type RendererName = 'kustomize' | 'helm' | 'sops';

const VARIABLE: Record<RendererName, string> = {
  kustomize: 'DRIFTLESS_KUSTOMIZE',
  helm: 'DRIFTLESS_HELM',
  sops: 'DRIFTLESS_SOPS',
};

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path of `name`'s binary; throws a {@link RendererNotFoundError} saying how to provide it. */
export function rendererBinary(
  name: RendererName,
  why: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const variable = VARIABLE[name];
  const explicit = env[variable];
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new RendererNotFoundError(
      `${why} needs ${name}, but ${variable}=${explicit} is not an executable file`,
    );
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && isExecutable(join(dir, name))) return join(dir, name);
  }
  throw new RendererNotFoundError(
    `${why} needs ${name}, which is not on PATH: set ${variable} to its path (npm run renderers builds the pinned version)`,
  );
}

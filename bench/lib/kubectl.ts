/**
 * The kubectl peer: the kubectl built from the same pinned Kubernetes module
 * as the test cluster, with a discovery cache of its own in the scratch
 * space (warm after the first call, as on anyone's machine).
 */
import { join } from 'node:path';
import type { BenchContext } from './context.ts';
import { runCommand, type CommandResult } from './command.ts';

export type Kubectl = (
  args: readonly string[],
  okCodes?: readonly number[],
) => Promise<CommandResult>;

export async function kubectlFor(ctx: BenchContext): Promise<Kubectl> {
  const { kubectl, kubeconfig } = await ctx.kubectl();
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  const cacheDir = join(ctx.dir, 'kube-cache');
  return (args, okCodes) =>
    runCommand(kubectl, [`--cache-dir=${cacheDir}`, ...args], {
      env,
      ...(okCodes ? { okCodes } : {}),
    });
}

/** What `--v=6` output tells about a kubectl run: requests sent and client-side throttling. */
export interface KubectlTrace {
  readonly requests: number;
  /** "Waited before sending request" lines: client-go's rate limiter held requests back. */
  readonly throttled: number;
}

export function traceOf(stderr: string): KubectlTrace {
  return {
    requests: stderr.match(/"Response" verb=/g)?.length ?? 0,
    throttled: stderr.match(/Waited before sending request|client-side throttling/g)?.length ?? 0,
  };
}

/**
 * The driftless.yaml bundled with the functions, loaded once per container:
 * a warm invocation pays nothing, and a config that fails to load is retried
 * by the next invocation instead of being cached as a failure.
 */
import { readOptionalEnv, type Environment } from '../config/env.ts';
import { loadConfig } from '../config/load-config.ts';
import type { Config } from '../config/types.ts';
import { DEFAULT_FUNCTION_CONFIG, FUNCTION_ENV } from './function-env.ts';

let cached: { readonly file: string; readonly config: Promise<Config> } | undefined;

/** The path of the config file: `DRIFTLESS_CONFIG`, else `driftless.yaml` in the working directory. */
export function functionConfigFile(env?: Environment): string {
  return readOptionalEnv(FUNCTION_ENV.config, env) ?? DEFAULT_FUNCTION_CONFIG;
}

/** The validated config, loaded on first use in this container. */
export function functionConfig(env?: Environment): Promise<Config> {
  const file = functionConfigFile(env);
  if (cached?.file !== file) {
    const config = loadConfig(file);
    cached = { file, config };
    config.catch(() => {
      if (cached?.config === config) cached = undefined;
    });
  }
  return cached.config;
}

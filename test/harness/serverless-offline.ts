/**
 * Runs the functions of serverless.yml under serverless-offline, as built by
 * serverless-esbuild (the same minified bundles `serverless package` zips):
 * the HTTP API route on one loopback port, the Lambda Invoke API on another,
 * the drift schedule firing on its own. Jobs between functions go through
 * the Invoke API (src/aws/invoke-job-queue.ts), since serverless-offline
 * drives no SQS triggers.
 *
 * The osls binary is started with node directly rather than through npx, in
 * a process group of its own, so stop() reaches everything it started (its
 * worker threads, esbuild's service process) with one signal.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './processes.ts';
import { REPO_ROOT } from './testbin.ts';

const SERVERLESS_BIN = join(REPO_ROOT, 'node_modules/serverless/bin/serverless.js');

/** Bundling five functions takes seconds; the margin is for loaded machines. */
const START_TIMEOUT_MS = 120_000;

/** How much output is kept: the functions' logs are read back by the test. */
const OUTPUT_CHARS = 4 * 1024 * 1024;

export interface ServerlessOfflineOptions {
  /** The driftless.yaml the functions load (`--param config=`). */
  readonly configFile: string;
  /** Added to the environment of serverless-offline and of every function (`--localEnvironment`). */
  readonly env?: NodeJS.ProcessEnv;
  /** Default `local`: the stage whose functions use the `store:` of driftless.yaml. */
  readonly stage?: string;
  /**
   * More `--param name=value` (they win over the stage's params), e.g. `handlers: 'handlers'`
   * and the queue URLs of a local SQS, to run the deployed entry points (test/e2e/sqs-queues.test.ts).
   */
  readonly params?: Readonly<Record<string, string>>;
}

/** What an Invoke API call answered. */
export interface InvokeAnswer {
  readonly status: number;
  /** `X-Amz-Function-Error`: set when the handler threw. */
  readonly functionError: string | undefined;
  readonly payload: unknown;
}

export interface ServerlessOffline {
  /** `http://127.0.0.1:<port>`: the HTTP API routes (`POST /webhook/{provider}`). */
  readonly httpUrl: string;
  /** `http://127.0.0.1:<port>`: the Lambda Invoke API. */
  readonly lambdaUrl: string;
  /** The deployed name of a function of serverless.yml, e.g. `driftless-local-rollback`. */
  functionName(name: string): string;
  /** Invokes a function through the Invoke API and waits for its result (RequestResponse). */
  invoke(name: string, payload: unknown): Promise<InvokeAnswer>;
  /** Everything printed so far (serverless-offline's own lines and the functions' logs). */
  output(): string;
  /** The JSON log lines the functions printed so far. */
  logs(): Record<string, unknown>[];
  /** Stops serverless-offline and everything it started, and removes its build folder. */
  stop(): Promise<void>;
}

/**
 * Starts `serverless offline` in the repository root and waits until its
 * HTTP API answers. Throws with its output when it exits or is not ready in time.
 */
export async function startServerlessOffline(
  options: ServerlessOfflineOptions,
): Promise<ServerlessOffline> {
  const stage = options.stage ?? 'local';
  const [httpPort, lambdaPort] = [await freePort(), await freePort()];
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const lambdaUrl = `http://127.0.0.1:${lambdaPort}`;
  const functionName = (name: string): string => `driftless-${stage}-${name}`;
  // Its own build folder: `serverless package` elsewhere (the packaging test) removes `.esbuild`.
  const workDir = await mkdtemp(join(tmpdir(), 'driftless-sls-offline-'));

  const child = spawn(
    process.execPath,
    [
      SERVERLESS_BIN,
      'offline',
      '--stage',
      stage,
      '--param',
      `config=${options.configFile}`,
      '--param',
      `esbuildWorkFolder=${relative(REPO_ROOT, workDir)}`,
      ...Object.entries(options.params ?? {}).flatMap(([name, value]) => [
        '--param',
        `${name}=${value}`,
      ]),
      '--host',
      '127.0.0.1',
      '--httpPort',
      String(httpPort),
      '--lambdaPort',
      String(lambdaPort),
      // The functions read their secrets (env: references) from the environment, as in Lambda.
      '--localEnvironment',
    ],
    {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...options.env,
        SLS_TELEMETRY_DISABLED: '1',
        SLS_NOTIFICATIONS_MODE: 'off',
        // No SQS offline: the functions hand jobs to each other through the Invoke API.
        DRIFTLESS_INVOKE_ENDPOINT: lambdaUrl,
        DRIFTLESS_FETCH_FUNCTION: functionName('fetch'),
        DRIFTLESS_APPLY_FUNCTION: functionName('apply'),
      },
    },
  );
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    child.on('exit', () => resolve());
    child.on('error', (error) => {
      output += `\nspawn error: ${error.message}`;
      resolve();
    });
  });
  const running = (): boolean => child.exitCode === null && child.signalCode === null;

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the whole group has exited already.
    }
  };
  // A test process that dies without stop() must not leave serverless-offline running.
  const killOnExit = (): void => {
    signalGroup('SIGKILL');
    rmSync(workDir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      // Worker threads die with the process; anything else it spawned goes with the group.
      signalGroup('SIGKILL');
      await rm(workDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    if (!running()) {
      await stop();
      throw new Error(`serverless offline exited before it was ready:\n${output.slice(-8192)}`);
    }
    // Any answer (a 404 for `/`) means the HTTP API server listens; it starts after the Invoke API.
    const answered = await fetch(`${httpUrl}/`, { signal: AbortSignal.timeout(1_000) }).then(
      () => true,
      () => false,
    );
    if (answered) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(
        `serverless offline was not ready within ${START_TIMEOUT_MS} ms:\n${output.slice(-8192)}`,
      );
    }
    await sleep(200);
  }

  const invoke = async (name: string, payload: unknown): Promise<InvokeAnswer> => {
    const response = await fetch(
      `${lambdaUrl}/2015-03-31/functions/${functionName(name)}/invocations`,
      {
        method: 'POST',
        headers: { 'x-amz-invocation-type': 'RequestResponse' },
        body: JSON.stringify(payload),
      },
    );
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: kept as text.
    }
    return {
      status: response.status,
      functionError: response.headers.get('x-amz-function-error') ?? undefined,
      payload: parsed,
    };
  };

  const logs = (): Record<string, unknown>[] =>
    output.split('\n').flatMap((line) => {
      if (!line.startsWith('{"time"')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

  return { httpUrl, lambdaUrl, functionName, invoke, output: () => output, logs, stop };
}

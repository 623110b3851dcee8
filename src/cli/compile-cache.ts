/**
 * Runs the bundled CLI (dist/cli/driftless.cjs) with V8's code cache, kept
 * per command in a private folder of the user's cache directory.
 *
 * Why: a command's own work is often smaller than compiling the code it runs.
 * A sync of an unchanged revision spent ~55 of its ~225 ms loading and
 * compiling modules, and every function it called was compiled again, lazily,
 * on first use. Node 20 has no compile cache for ES modules
 * (`module.enableCompileCache()` came with Node 22.1), but `vm.Script` takes
 * and produces V8's cached data for a CommonJS-shaped bundle. The data a
 * script produces after it ran holds the bytecode of every function it
 * called, so the next run of the same command deserialises instead of parsing
 * and compiling (measured, unchanged sync of 500 ConfigMaps: ~225 → ~165 ms;
 * `--help` 70 → 67 ms). Only our code and the small libraries every command
 * uses are in that bundle: large dependencies (AWS SDK, isomorphic-git,
 * openpgp, ssh2, …) are bundles of their own under dist/cli/vendor/, loaded
 * by `require` where the code first needs them, so no command pays for
 * parsing them or for caching their scopes.
 *
 * The cache is an optimisation only: anything unusual (no home directory, a
 * read-only or shared folder, a file V8 rejects or cannot read) runs the
 * bundle as if there were no cache. V8 itself rejects data made by another
 * V8 version or with other flags; the file name carries the bundle's digest,
 * so a new build never meets the bytecode of an old one. A cache is written
 * only after a command exits 0, so a run that failed half-way (an unreachable
 * cluster) does not leave a cache missing the code a successful run needs;
 * and written twice (GENERATIONS says why).
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import Module, { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { Script } from 'node:vm';
import { readOptionalEnv, type Environment } from '../config/env.ts';
import { userCacheDir } from '../config/git-cache-dir.ts';
import { COMMANDS } from './commands.ts';

/** `DRIFTLESS_COMPILE_CACHE`: a folder, or `off`; unset means the user's cache directory. */
const COMPILE_CACHE_VARIABLE = 'DRIFTLESS_COMPILE_CACHE';

const COMMAND_NAMES: ReadonlySet<string> = new Set(COMMANDS.map((command) => command.name));

/** The cache's file extension; files without it in the folder are never touched. */
const CACHE_SUFFIX = '.v8cache';

/**
 * The folder caches go to, or undefined when caching is off: the variable's
 * value, else `driftless/compile-cache` in the user's cache directory
 * (`$XDG_CACHE_HOME`, else `~/.cache`, on Linux).
 */
export function compileCacheDir(env: Environment): string | undefined {
  const setting = readOptionalEnv(COMPILE_CACHE_VARIABLE, env);
  if (setting === 'off') return undefined;
  if (setting !== undefined) return resolve(setting);
  return join(userCacheDir(env), 'driftless', 'compile-cache');
}

/**
 * Which cache a command line uses: each command compiles different code, so
 * each has its own; `--help`, usage errors and the like share `other`.
 */
export function cacheNameOf(args: readonly string[]): string {
  return args.find((arg) => COMMAND_NAMES.has(arg)) ?? 'other';
}

/**
 * Creates `dir` (mode 0700) and returns whether it is safe to load bytecode
 * from: a folder of this user that nobody else can write to. Cached data is
 * code; a file someone else could plant must never be run.
 */
function isPrivateDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stats = statSync(dir);
    const uid = process.getuid?.();
    return (
      stats.isDirectory() && (uid === undefined || stats.uid === uid) && (stats.mode & 0o022) === 0
    );
  } catch {
    return false;
  }
}

/** What {@link runBundle} needs: the bundle, its build's digest, the command line and environment. */
export interface BundleRun {
  /** Absolute path of the CommonJS bundle. */
  readonly bundle: string;
  /** Digest of the bundle's content, fixed at build time. */
  readonly digest: string;
  readonly args: readonly string[];
  readonly env: Environment;
}

function readIfPresent(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * How many times a command's cache is written. Data produced after a run
 * holds what that run compiled: the first sync of a track renders and
 * creates, the next ones compare, so the second run, which starts from the
 * first run's data, writes it once more with what it added. Later runs only
 * read it: producing the data costs ~5 ms, more than most runs would add.
 */
const GENERATIONS = 2;

/** A command's cache files: `<name>.<generation>.v8cache` in `dir`. */
interface CacheFiles {
  readonly dir: string;
  /** What every cache this build can use on this Node starts with: `<digest>-<node>-<arch>-`. */
  readonly prefix: string;
  /** `<prefix><command>`. */
  readonly name: string;
}

function cacheFile(files: CacheFiles, generation: number): string {
  return join(files.dir, `${files.name}.${generation}${CACHE_SUFFIX}`);
}

/** The command's cache files, when caching is on and its folder is private. */
function cacheFilesOf(run: BundleRun): CacheFiles | undefined {
  const dir = compileCacheDir(run.env);
  if (dir === undefined || !isPrivateDir(dir)) return undefined;
  const prefix = `${run.digest}-${process.version}-${process.arch}-`;
  return { dir, prefix, name: `${prefix}${cacheNameOf(run.args)}` };
}

/** The newest generation of the command's cache, if there is one. */
function readNewest(files: CacheFiles): { data: Buffer; generation: number } | undefined {
  for (let generation = GENERATIONS; generation >= 1; generation--) {
    const data = readIfPresent(cacheFile(files, generation));
    if (data !== undefined) return { data, generation };
  }
  return undefined;
}

/**
 * Writes generation `generation` through a temporary name (two runs writing
 * at once both leave a whole file), then removes this command's other
 * generations and every cache of other builds or Node versions, which no run
 * of this build on this Node can use.
 */
function writeCache(files: CacheFiles, generation: number, data: Buffer): void {
  const file = cacheFile(files, generation);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, data, { mode: 0o600 });
    renameSync(temporary, file);
  } catch (error) {
    // A half-written file (a full disk) must not stay behind: its name never ends in the suffix.
    rmSync(temporary, { force: true });
    throw error;
  }
  const keep = basename(file);
  for (const name of readdirSync(files.dir)) {
    if (!name.endsWith(CACHE_SUFFIX) || name === keep) continue;
    if (!name.startsWith(files.prefix) || name.startsWith(`${files.name}.`)) {
      unlinkSync(join(files.dir, name));
    }
  }
}

/** The wrapped bundle's function: CommonJS's module parameters. */
type ModuleFunction = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
) => void;

/** Compiles and runs the bundle as a CommonJS module, with the command's cache when there is one. */
export function runBundle(run: BundleRun): void {
  const source = readFileSync(run.bundle, 'utf8');
  const files = cacheFilesOf(run);
  const cached = files === undefined ? undefined : readNewest(files);
  const script = new Script(Module.wrap(source), {
    filename: run.bundle,
    ...(cached === undefined ? {} : { cachedData: cached.data }),
  });
  // Data V8 rejected (another V8, other flags, a damaged file) starts again at generation 1.
  const generation = cached === undefined || script.cachedDataRejected ? 1 : cached.generation + 1;
  if (files !== undefined && generation <= GENERATIONS) {
    process.once('exit', (code) => {
      if (code !== 0) return;
      try {
        writeCache(files, generation, script.createCachedData());
      } catch {
        // A cache that cannot be written (read-only, full disk) costs the next run time, nothing else.
      }
    });
  }
  const module = { exports: {} };
  const compiled = script.runInThisContext() as ModuleFunction;
  compiled.call(
    module.exports,
    module.exports,
    createRequire(run.bundle),
    module,
    run.bundle,
    dirname(run.bundle),
  );
}

/**
 * The `driftless` command as a user gets it: `npm pack` of the project (its
 * `prepare` script bundles the CLI into dist/cli, as for publishing), the
 * tarball installed into a fresh prefix with npm, and that prefix's
 * `node_modules/.bin/driftless` run directly — not through npx, which adds
 * npm's own start (~0.9 s) to every run.
 */
import { mkdir } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { REPO_ROOT } from '../../test/harness/testbin.ts';
import { runCommand } from './command.ts';
import type { BenchContext } from './context.ts';

/** The installed bin and the environment it runs in. */
export interface InstalledCli {
  /** `<prefix>/node_modules/.bin/driftless`. */
  readonly bin: string;
  /** PATH starts with this process's node, which the bin's `#!/usr/bin/env node` then runs. */
  readonly env: NodeJS.ProcessEnv;
}

let installed: Promise<InstalledCli> | undefined;

/** Packs and installs once per bench run (the pack rebuilds the project's dist/cli). */
export function installedCli(ctx: BenchContext): Promise<InstalledCli> {
  installed ??= (async () => {
    const dir = await ctx.scratch('installed-cli');
    const packed = await runCommand(
      'npm',
      ['pack', '--json', '--pack-destination', dir, '--no-fund', '--no-audit'],
      { cwd: REPO_ROOT },
    );
    // Anything a lifecycle script prints comes before the JSON array.
    const json = packed.stdout.slice(Math.max(0, packed.stdout.search(/^\[/m)));
    const [{ filename }] = JSON.parse(json) as [{ filename: string }];
    const prefix = join(dir, 'prefix');
    await mkdir(prefix);
    // The registry for the package's dependencies (the npm cache first); the bundle
    // itself needs none of them, but npm installs what package.json declares.
    await runCommand(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--prefix',
        prefix,
        join(dir, filename),
      ],
      { cwd: prefix },
    );
    const env = {
      ...process.env,
      PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
    };
    return { bin: join(prefix, 'node_modules', '.bin', 'driftless'), env };
  })();
  return installed;
}

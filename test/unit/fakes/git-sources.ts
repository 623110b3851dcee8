/**
 * Small Git sources for unit tests of the sync use-cases: no repository, only the commits and
 * files a test names.
 */
import type { GitSource } from '../../../src/source/ports.ts';

/** The commit a {@link gitAt} source's head is at. */
export const FIXED_REVISION = '1'.repeat(40);

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;

/** A Git source whose head is FIXED_REVISION, holding `names` as ConfigMaps (one file each). */
export function gitAt(names: readonly string[]): GitSource {
  return {
    resolve: async () => ({ revision: FIXED_REVISION, ref: 'refs/heads/main' }),
    readFiles: async () =>
      names.map((name) => ({
        path: `${name}.yaml`,
        content: new TextEncoder().encode(configMap(name)),
      })),
  };
}

/** A Git source whose head can move, with one file (`app.yaml`) per commit. */
export class MovingGit implements GitSource {
  /** Each commit's `app.yaml`, by revision; reading any other commit fails. */
  readonly files: Map<string, string>;

  constructor(
    public head: string,
    files: Iterable<readonly [string, string]> = [],
  ) {
    this.files = new Map(files);
  }

  async resolve() {
    return { revision: this.head, ref: 'refs/heads/main' };
  }

  async readFiles(_track: unknown, revision: string) {
    const content = this.files.get(revision);
    if (content === undefined) throw new Error(`no commit ${revision}`);
    return [{ path: 'app.yaml', content: new TextEncoder().encode(content) }];
  }
}

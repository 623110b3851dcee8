/**
 * What unit tests of two-way sync's write-back push to and keep their state in: a branch in memory
 * (each push a commit of its own) and the real fs store; and the write-back of the SOPS-encrypted
 * Secret `apps/db` (db.yaml) several of them send.
 */
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach } from 'node:test';
import type { WriteBackChange } from '../../../src/render/write-back-change.ts';
import type { CommitRequest, GitSource } from '../../../src/source/ports.ts';
import { FsStore } from '../../../src/store/fs-store.ts';

/** A write-back of the Secret `apps/db`, whose file db.yaml is SOPS-encrypted, with `extra`. */
export const dbSecretChange = (extra: Partial<WriteBackChange> = {}): WriteBackChange => ({
  subject: 'Secret/apps/db',
  apiVersion: 'v1',
  kind: 'Secret',
  name: 'db',
  namespace: 'apps',
  file: 'db.yaml',
  line: 1,
  fields: [],
  ...extra,
});

/** The branch and the store the tests of one `describe` share, as {@link writeBackBranch} keeps them. */
export interface WriteBackBranch {
  /** Pushes to the branch; its head is the newest commit pushed, else the revision it started at. */
  readonly source: GitSource;
  /** The branch's files, by path. */
  readonly files: Map<string, string>;
  /** The commits pushed, oldest first: `1111…`, `2222…`, and so on. */
  readonly commits: string[];
  readonly store: FsStore;
}

/**
 * For the tests of the calling `describe`: before each, the branch holds `files` at `revision`
 * with no commits pushed, and the store (in a folder of its own, prefixed `prefix`) is empty.
 * The same objects throughout, so a test reads them as they are during that test.
 */
export function writeBackBranch(
  prefix: string,
  revision: string,
  files: Iterable<readonly [string, string]>,
): WriteBackBranch {
  const start = [...files];
  // Made now, not in a hook: the store is made once, with its path. Emptied after each test.
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const branch: WriteBackBranch = {
    files: new Map(),
    commits: [],
    store: new FsStore({ path: dir }),
    source: {
      resolve: async () => ({
        revision: branch.commits.at(-1) ?? revision,
        ref: 'refs/heads/main',
      }),
      readFiles: async () => [],
      commit: async (_track, request: CommitRequest) => {
        const edited = await request.edit(async (path) => branch.files.get(path));
        if (edited.size === 0) return { commit: null, attempts: 1 };
        for (const [path, content] of edited) branch.files.set(path, content);
        branch.commits.push(String(branch.commits.length + 1).repeat(40));
        return { commit: branch.commits.at(-1)!, attempts: 1 };
      },
    },
  };
  beforeEach(() => {
    branch.files.clear();
    for (const [path, content] of start) branch.files.set(path, content);
    branch.commits.length = 0;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  after(() => rm(dir, { recursive: true, force: true }));
  return branch;
}

/**
 * Symlinked directories under a track's subPath (read-tree-files.ts), over an in-memory
 * object store, and the refusal of a SHA-256 ref advertisement (upload-pack.ts). The same
 * behaviours against real repositories: test/integration/git-symlinks.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { SubPathError } from '../../src/source/git/errors.ts';
import {
  MAX_BYTES_PER_READ,
  MAX_DIRECTORY_LINKS,
  MAX_ENTRIES_PER_READ,
  MAX_FILES_PER_READ,
  MAX_NESTED_DIRECTORY_LINKS,
  readTreeFiles,
  type TreeEntry,
  type TreeReader,
} from '../../src/source/git/read-tree-files.ts';
import {
  parseAdvertisement,
  UnsupportedObjectFormatError,
} from '../../src/source/git/upload-pack.ts';

const CONTEXT = { track: 'web', repository: 'https://h/r.git' };
const REVISION = 'c'.repeat(40);

/** A file's content, a symlink's target, or a directory. */
type Node = string | { link: string } | { [name: string]: Node };
type Directory = { [name: string]: Node };

/** An object store of `root`, with content-addressed fake oids; counts the trees read. */
function store(root: Directory): {
  objects: TreeReader;
  rootTree: string;
  treeReads: () => number;
} {
  const trees = new Map<string, TreeEntry[]>();
  const blobs = new Map<string, Uint8Array>();
  const id = (text: string): string => createHash('sha1').update(text).digest('hex');
  const addBlob = (content: string): string => {
    const oid = id(`blob\0${content}`);
    blobs.set(oid, new TextEncoder().encode(content));
    return oid;
  };
  const addTree = (node: Directory): string => {
    const entries = Object.entries(node).map(([path, child]): TreeEntry => {
      if (typeof child === 'string')
        return { path, mode: '100644', type: 'blob', oid: addBlob(child) };
      if (typeof child.link === 'string')
        return { path, mode: '120000', type: 'blob', oid: addBlob(child.link) };
      return { path, mode: '040000', type: 'tree', oid: addTree(child as Directory) };
    });
    const oid = id(`tree\0${JSON.stringify(entries)}`);
    trees.set(oid, entries);
    return oid;
  };
  const rootTree = addTree(root);
  let reads = 0;
  return {
    rootTree,
    treeReads: () => reads,
    objects: {
      async readTree(oid) {
        reads += 1;
        return trees.get(oid) ?? assert.fail(`no tree ${oid}`);
      },
      async readBlob(oid) {
        return blobs.get(oid) ?? assert.fail(`no blob ${oid}`);
      },
    },
  };
}

async function read(root: Directory, subPath?: string): Promise<Record<string, string>> {
  const { objects, rootTree } = store(root);
  const files = await readTreeFiles(objects, rootTree, subPath, REVISION, CONTEXT);
  return Object.fromEntries(
    files.map((file) => [file.path, new TextDecoder().decode(file.content)]),
  );
}

async function refusal(root: Directory, subPath?: string): Promise<SubPathError> {
  const { objects, rootTree } = store(root);
  const error: unknown = await readTreeFiles(objects, rootTree, subPath, REVISION, CONTEXT).then(
    () => assert.fail('the read was not refused'),
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof SubPathError, `not a SubPathError: ${String(error)}`);
  assert.equal(error.code, 'GIT_SUBPATH_INVALID');
  return error;
}

describe('symlinked directories under the subPath', () => {
  it('reads a linked directory under the link path, its own links resolved from where it really is', async () => {
    // Prepare: base's link is relative to apps/base, not to apps/prod/base.
    const root = {
      common: { 'labels.yaml': 'labels' },
      apps: {
        base: {
          'deployment.yaml': 'deployment',
          nested: { 'service.yml': 'service' },
          'labels.yaml': { link: '../../common/labels.yaml' },
          'README.md': 'not read',
        },
        prod: { 'web.yaml': 'web', base: { link: '../base' } },
      },
    };

    // Act
    const files = await read(root, 'apps/prod');

    // Assess
    assert.deepEqual(files, {
      'apps/prod/base/deployment.yaml': 'deployment',
      'apps/prod/base/labels.yaml': 'labels',
      'apps/prod/base/nested/service.yml': 'service',
      'apps/prod/web.yaml': 'web',
    });
  });

  it('follows a link to a linked directory, and a link to a directory through another link', async () => {
    // Prepare
    const root = {
      shared: { 'a.yaml': 'a' },
      alias: { link: 'shared' },
      deploy: { 'via-alias': { link: '../alias' }, 'into-alias': { link: '../alias/.' } },
    };

    // Act
    const files = await read(root, 'deploy');

    // Assess
    assert.deepEqual(files, { 'deploy/into-alias/a.yaml': 'a', 'deploy/via-alias/a.yaml': 'a' });
  });

  it('refuses a linked directory that leads outside the repository, naming the link and target', async () => {
    // Prepare: the escaping link sits in the linked directory, and is named where it really is.
    const root = {
      apps: {
        base: { 'a.yaml': 'a', etc: { link: '../../../etc' } },
        prod: { base: { link: '../base' } },
      },
    };

    // Act
    const absolute = await refusal({ apps: { prod: { etc: { link: '/etc' } } } }, 'apps/prod');
    const inside = await refusal(root, 'apps/prod');

    // Assess
    assert.equal(
      absolute.message,
      `track "web": symlink "apps/prod/etc" points outside the repository ("/etc") at revision ${REVISION}; the revision is refused`,
    );
    assert.equal(
      inside.message,
      `track "web": symlink "apps/prod/base/etc" (at "apps/base/etc") points outside the repository ("../../../etc") at revision ${REVISION}; the revision is refused`,
    );
  });

  it('refuses a directory link to itself, to a directory above it, and two directories linking each other', async () => {
    // Prepare
    const self = { deploy: { 'a.yaml': 'a', again: { link: '.' } } };
    const parent = { deploy: { app: { 'a.yaml': 'a', up: { link: '..' } } } };
    const mutual = {
      deploy: {
        a: { 'a.yaml': 'a', b: { link: '../b' } },
        b: { 'b.yaml': 'b', a: { link: '../a' } },
      },
    };

    // Act
    const errors = [
      await refusal(self, 'deploy'),
      await refusal(parent, 'deploy'),
      await refusal(mutual, 'deploy'),
    ];

    // Assess
    const loop =
      'a directory the link is in or is reached through, so following it would never end (a symlink loop)';
    assert.equal(
      errors[0]!.message,
      `track "web": symlink "deploy/again" points to "." at revision ${REVISION}: ${loop}`,
    );
    assert.equal(
      errors[1]!.message,
      `track "web": symlink "deploy/app/up" points to ".." at revision ${REVISION}: ${loop}`,
    );
    assert.match(
      errors[2]!.message,
      /^track "web": symlink "deploy\/a\/b\/a\/b" \(at "deploy\/a\/b"\) points to "\.\.\/b" .*a symlink loop/,
    );
  });

  it(`follows ${MAX_NESTED_DIRECTORY_LINKS} directory links inside one another and refuses one more`, async () => {
    // Prepare: d0/next -> ../d1, d1/next -> ../d2, ...: no loop, only depth.
    const chain = (links: number): Directory =>
      Object.fromEntries(
        Array.from({ length: links + 1 }, (_, i): [string, Directory] => [
          `d${i}`,
          i < links
            ? { [`${i}.yaml`]: `${i}`, next: { link: `../d${i + 1}` } }
            : { 'end.yaml': 'end' },
        ]),
      );

    // Act
    const deepest = await read(chain(MAX_NESTED_DIRECTORY_LINKS), 'd0');
    const tooDeep = await refusal(chain(MAX_NESTED_DIRECTORY_LINKS + 1), 'd0');

    // Assess
    assert.equal(deepest[`d0${'/next'.repeat(MAX_NESTED_DIRECTORY_LINKS)}/end.yaml`], 'end');
    assert.match(
      tooDeep.message,
      new RegExp(
        `symlink "d0${'/next'.repeat(MAX_NESTED_DIRECTORY_LINKS + 1)}" \\(at "d${MAX_NESTED_DIRECTORY_LINKS}/next"\\) points to "\\.\\./d${MAX_NESTED_DIRECTORY_LINKS + 1}" at revision ${REVISION}: more than ${MAX_NESTED_DIRECTORY_LINKS} directory symlinks inside one another$`,
      ),
    );
  });

  it(`refuses more than ${MAX_DIRECTORY_LINKS} directory links in one read, before reading them all`, async () => {
    // Prepare: 4 levels of 8 links each to the next level: 8^4 walks without the cap.
    const level = (depth: number): Directory =>
      depth === 4
        ? { 'a.yaml': 'a' }
        : Object.fromEntries(
            Array.from({ length: 8 }, (_, i) => [`l${i}`, { link: `../../t${depth + 1}` }]),
          );
    const root: Directory = { t0: { d: level(0) } };
    for (let depth = 1; depth <= 4; depth++) root[`t${depth}`] = { d: level(depth) };
    const { objects, rootTree, treeReads } = store(root);

    // Act
    const error: unknown = await readTreeFiles(objects, rootTree, 't0', REVISION, CONTEXT).catch(
      (failure: unknown) => failure,
    );

    // Assess
    assert.ok(error instanceof SubPathError, String(error));
    assert.match(
      error.message,
      new RegExp(`more than ${MAX_DIRECTORY_LINKS} directory symlinks followed in one read$`),
    );
    assert.ok(treeReads() < 8 ** 4, `${treeReads()} trees read`);
  });
});

/**
 * An object store given object by object, so one tree can be named many times (what the
 * content-addressed {@link store} would take millions of hashes to build); counts blob reads.
 */
function objectStore(
  trees: Record<string, TreeEntry[]>,
  blobs: Record<string, Uint8Array>,
): { objects: TreeReader; blobReads: () => number } {
  let reads = 0;
  return {
    blobReads: () => reads,
    objects: {
      async readTree(oid) {
        return trees[oid] ?? assert.fail(`no tree ${oid}`);
      },
      async readBlob(oid) {
        reads += 1;
        return blobs[oid] ?? assert.fail(`no blob ${oid}`);
      },
    },
  };
}

/** `count` entries of one type, all naming object `oid`. */
function entries(
  count: number,
  kind: 'file' | 'tree' | 'link',
  oid: string,
  name = 'e',
): TreeEntry[] {
  return Array.from({ length: count }, (_, i): TreeEntry => {
    if (kind === 'tree') return { path: `${name}${i}`, mode: '040000', type: 'tree', oid };
    const mode = kind === 'link' ? '120000' : '100644';
    return { path: `${name}${i}${kind === 'file' ? '.yaml' : ''}`, mode, type: 'blob', oid };
  });
}

/** The refusal of reading `root` of the given store (under `subPath`), or a failed assertion. */
async function limitRefusal(
  objects: TreeReader,
  subPath?: string,
  scope: 'manifests' | 'repository' = 'manifests',
): Promise<SubPathError> {
  const error: unknown = await readTreeFiles(
    objects,
    'root',
    subPath,
    REVISION,
    CONTEXT,
    scope,
  ).then(
    () => assert.fail('the read was not refused'),
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof SubPathError, `not a SubPathError: ${String(error)}`);
  assert.equal(error.code, 'GIT_SUBPATH_INVALID');
  return error;
}

describe('the limits of one read', () => {
  const manifest = new TextEncoder().encode('kind: ConfigMap\n');
  const refused = (limit: number, what: string, at: string): RegExp =>
    new RegExp(
      `^track "web": revision ${REVISION} has more than ${limit} ${what} to read \\(the limit of one read\\), reached at "${at}"; .*the revision is refused$`,
    );

  it(`refuses ${MAX_DIRECTORY_LINKS} directory links to a directory of 2,000 manifests, near ${MAX_FILES_PER_READ} files`, async () => {
    // Prepare: every link is allowed on its own (no loop, no nesting, not too many links).
    const { objects, blobReads } = objectStore(
      {
        root: [
          { path: 'big', mode: '040000', type: 'tree', oid: 'big' },
          { path: 'links', mode: '040000', type: 'tree', oid: 'links' },
        ],
        big: entries(2_000, 'file', 'manifest', 'f'),
        links: entries(MAX_DIRECTORY_LINKS, 'link', 'to-big', 'l'),
      },
      { manifest, 'to-big': new TextEncoder().encode('../big') },
    );

    // Act
    const error = await limitRefusal(objects, 'links');

    // Assess: one file, then the 100,000 repeats of its blob; the next one is refused before it
    // is read (512,000 were read before).
    assert.match(error.message, refused(MAX_FILES_PER_READ, 'files', 'links/l50/f1.yaml'));
    assert.ok(blobReads() <= MAX_FILES_PER_READ + 2 * 51, `${blobReads()} blobs read`);
  });

  it('refuses a tree bomb without symlinks (4 levels of 32 entries naming one subtree: a million files from 5 objects)', async () => {
    // Prepare
    const trees: Record<string, TreeEntry[]> = { t0: entries(32, 'file', 'manifest', 'f') };
    for (let depth = 1; depth <= 3; depth++)
      trees[`t${depth}`] = entries(32, 'tree', `t${depth - 1}`, 'd');
    trees['root'] = [{ path: 'x', mode: '040000', type: 'tree', oid: 't3' }];
    const { objects, blobReads } = objectStore(trees, { manifest });

    // Act
    const error = await limitRefusal(objects, undefined, 'repository');

    // Assess: one file and 100,000 repeats of its blob are 3 whole d-trees of 32 x 32 x 32, then
    // 97 d1 trees and 22 more files.
    assert.match(error.message, refused(MAX_FILES_PER_READ, 'files', 'x/d3/d1/d21/f1.yaml'));
    assert.equal(blobReads(), MAX_FILES_PER_READ + 1);
  });

  it(`refuses more than ${MAX_BYTES_PER_READ} bytes of files, counting a file read twice twice`, async () => {
    // Prepare: one 1 MiB manifest, named 65 times by two directories.
    const { objects, blobReads } = objectStore(
      {
        root: [
          { path: 'a', mode: '040000', type: 'tree', oid: 'half' },
          { path: 'b', mode: '040000', type: 'tree', oid: 'half' },
          { path: 'c.yaml', mode: '100644', type: 'blob', oid: 'mib' },
        ],
        half: entries(32, 'file', 'mib', 'f'),
      },
      { mib: new Uint8Array(1024 * 1024) },
    );

    // Act
    const error = await limitRefusal(objects);

    // Assess: the file and 63 repeats are read; the 64th repeat would reach 64 MiB of repeats.
    assert.match(error.message, refused(MAX_BYTES_PER_READ, 'bytes of files', 'c.yaml'));
    assert.equal(blobReads(), 64);
  });

  it(`refuses more than ${MAX_ENTRIES_PER_READ} tree entries even when none is read (a bomb of README files)`, async () => {
    // Prepare: 100 x 100 x 100 x 100 entries named like nothing the manifests scope reads.
    const trees: Record<string, TreeEntry[]> = {
      t0: Array.from({ length: 100 }, (_, i) => ({
        path: `README${i}.md`,
        mode: '100644',
        type: 'blob' as const,
        oid: 'readme',
      })),
      t1: entries(100, 'tree', 't0', 'd'),
      t2: entries(100, 'tree', 't1', 'd'),
      root: entries(100, 'tree', 't2', 'd'),
    };
    const { objects, blobReads } = objectStore(trees, {});

    // Act
    const error = await limitRefusal(objects);

    // Assess: d0 and 99 of its directories (1 + 100 + 100 x 100 entries each) are 1,000,000.
    assert.match(error.message, refused(MAX_ENTRIES_PER_READ, 'tree entries', 'd0/d99'));
    assert.equal(blobReads(), 0);
  });

  it(`returns every file of a repository of ${MAX_FILES_PER_READ + 50_000} different files, and counts only repeats`, async () => {
    // Prepare: 150 directories of 1,000 files, each file a blob of its own (a large application
    // repository, read whole by a kustomize track), then the same with one directory named
    // again by 101 more entries (101,000 repeats).
    const trees: Record<string, TreeEntry[]> = {};
    const blobs: Record<string, Uint8Array> = {};
    for (let d = 0; d < 150; d++) {
      trees[`dir${d}`] = Array.from({ length: 1_000 }, (_, f): TreeEntry => {
        const oid = `blob-${d}-${f}`;
        blobs[oid] = manifest;
        return { path: `f${f}.yaml`, mode: '100644', type: 'blob', oid };
      });
    }
    const directories = Array.from({ length: 150 }, (_, d): TreeEntry => ({
      path: `d${d}`,
      mode: '040000',
      type: 'tree',
      oid: `dir${d}`,
    }));
    const large = objectStore({ ...trees, root: directories }, blobs).objects;
    const repeated = objectStore(
      { ...trees, root: [...directories, ...entries(101, 'tree', 'dir0', 'again')] },
      blobs,
    ).objects;

    // Act
    const all = await readTreeFiles(large, 'root', undefined, REVISION, CONTEXT, 'repository');
    const error = await limitRefusal(repeated, undefined, 'repository');

    // Assess: no cap on a repository's own files; the 100,001st repeat is refused.
    assert.equal(all.length, MAX_FILES_PER_READ + 50_000);
    assert.match(error.message, refused(MAX_FILES_PER_READ, 'files', 'again100/f0.yaml'));
  });
});

describe('a SHA-256 ref advertisement', () => {
  const pkt = (text: string): string =>
    (Buffer.byteLength(text) + 4).toString(16).padStart(4, '0') + text;
  const advertisement = (capabilities: string, oid: string): Buffer =>
    Buffer.from(
      pkt('# service=git-upload-pack\n') +
        '0000' +
        pkt(`${oid} HEAD\0${capabilities}\n`) +
        pkt(`${oid} refs/heads/main\n`) +
        '0000',
    );

  it('is refused by its object-format capability; sha1, named or not, is read', () => {
    // Prepare
    const sha256 = advertisement('shallow object-format=sha256 agent=git/2.39.5', 'a'.repeat(64));

    // Act
    const refused = (() => {
      try {
        parseAdvertisement(sha256);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    const named = parseAdvertisement(advertisement('shallow object-format=sha1', 'b'.repeat(40)));
    const implied = parseAdvertisement(advertisement('shallow', 'b'.repeat(40)));

    // Assess
    assert.ok(refused instanceof UnsupportedObjectFormatError, String(refused));
    assert.equal(refused.format, 'sha256');
    for (const parsed of [named, implied]) {
      assert.deepEqual(
        parsed.refs.map((entry) => entry.ref),
        ['HEAD', 'refs/heads/main'],
      );
    }
  });
});

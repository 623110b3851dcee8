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
  MAX_DIRECTORY_LINKS,
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

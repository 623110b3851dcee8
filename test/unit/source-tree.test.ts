import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { SubPathError } from '../../src/source/git/errors.ts';
import {
  readTreeFiles,
  type TreeReader,
  type TreeEntry,
} from '../../src/source/git/read-tree-files.ts';

const CONTEXT = { track: 'web', repository: 'https://h/r.git' };
const REVISION = 'c'.repeat(40);

/** A node of an in-memory tree: a file's content, a symlink's target, a directory, or a submodule. */
type Node = string | { link: string } | { submodule: true } | { [name: string]: Node };

/** An in-memory object store built from nested objects, with content-addressed fake oids. */
function store(root: { [name: string]: Node }): { objects: TreeReader; rootTree: string } {
  const trees = new Map<string, TreeEntry[]>();
  const blobs = new Map<string, Uint8Array>();
  const id = (kind: string, text: string): string =>
    createHash('sha1').update(`${kind}\0${text}`).digest('hex');
  const addBlob = (content: string): string => {
    const oid = id('blob', content);
    blobs.set(oid, new TextEncoder().encode(content));
    return oid;
  };
  const addTree = (node: { [name: string]: Node }): string => {
    const entries: TreeEntry[] = Object.entries(node).map(([path, child]): TreeEntry => {
      if (typeof child === 'string')
        return { path, mode: '100644', type: 'blob', oid: addBlob(child) };
      if ('link' in child && typeof child.link === 'string') {
        return { path, mode: '120000', type: 'blob', oid: addBlob(child.link) };
      }
      if ('submodule' in child && child.submodule === true) {
        return { path, mode: '160000', type: 'commit', oid: id('commit', path) };
      }
      return {
        path,
        mode: '040000',
        type: 'tree',
        oid: addTree(child as { [name: string]: Node }),
      };
    });
    const oid = id('tree', JSON.stringify(entries));
    trees.set(oid, entries);
    return oid;
  };
  const rootTree = addTree(root);
  return {
    rootTree,
    objects: {
      async readTree(oid) {
        const tree = trees.get(oid);
        if (!tree) throw new Error(`no tree ${oid}`);
        return tree;
      },
      async readBlob(oid) {
        const blob = blobs.get(oid);
        if (!blob) throw new Error(`no blob ${oid}`);
        return blob;
      },
    },
  };
}

async function read(
  root: { [name: string]: Node },
  subPath?: string,
  scope?: 'manifests' | 'repository',
): Promise<Record<string, string>> {
  const { objects, rootTree } = store(root);
  const files = await readTreeFiles(objects, rootTree, subPath, REVISION, CONTEXT, scope);
  return Object.fromEntries(
    files.map((file) => [file.path, new TextDecoder().decode(file.content)]),
  );
}

async function refusal(root: { [name: string]: Node }, subPath?: string): Promise<SubPathError> {
  const { objects, rootTree } = store(root);
  try {
    await readTreeFiles(objects, rootTree, subPath, REVISION, CONTEXT);
  } catch (error) {
    assert.ok(error instanceof SubPathError, `not a SubPathError: ${String(error)}`);
    assert.equal(error.code, 'GIT_SUBPATH_INVALID');
    return error;
  }
  assert.fail('the read was not refused');
}

describe('reading a tree', () => {
  it('reads .yaml, .yml and .json files (any case) under the subPath, recursively', async () => {
    // Prepare
    const root = {
      'README.md': 'x',
      'top.yaml': 'top',
      deploy: {
        'a.yaml': 'a',
        'b.YML': 'b',
        'notes.txt': 'n',
        nested: { 'c.json': '{}' },
        sub: { submodule: true },
      },
    } satisfies Record<string, Node>;

    // Act
    const all = await read(root);
    const deploy = await read(root, './deploy/');

    // Assess
    assert.deepEqual(Object.keys(all), [
      'deploy/a.yaml',
      'deploy/b.YML',
      'deploy/nested/c.json',
      'top.yaml',
    ]);
    assert.deepEqual(deploy, {
      'deploy/a.yaml': 'a',
      'deploy/b.YML': 'b',
      'deploy/nested/c.json': '{}',
    });
  });

  it('refuses a subPath with "..", an absolute one, and one that does not exist', async () => {
    // Prepare
    const root = { deploy: { 'a.yaml': 'a' } };

    // Act
    const dotDot = await refusal(root, 'deploy/../..');
    const absolute = await refusal(root, '/etc');
    const missing = await refusal(root, 'deploy/prod');
    const file = await refusal(root, 'deploy/a.yaml');

    // Assess
    assert.match(
      dotDot.message,
      /^track "web": subPath "deploy\/\.\.\/\.\." must not contain "\.\."/,
    );
    assert.match(absolute.message, /must be a relative path/);
    assert.equal(
      missing.message,
      `track "web": subPath "deploy/prod" does not exist at revision ${REVISION}`,
    );
    assert.match(file.message, /is a file/);
  });

  it('follows a symlink to a file inside the repository, under the link name', async () => {
    // Prepare
    const root = {
      common: { 'labels.yaml': 'common' },
      deploy: { 'labels.yaml': { link: '../common/labels.yaml' }, readme: { link: 'nowhere' } },
    };

    // Act
    const files = await read(root, 'deploy');

    // Assess
    assert.deepEqual(files, { 'deploy/labels.yaml': 'common' });
  });

  it('follows a symlink to a directory inside the repository, under the link path', async () => {
    // Prepare
    const root = { base: { 'a.yaml': 'a' }, deploy: { 'b.yaml': 'b', base: { link: '../base' } } };

    // Act
    const files = await read(root, 'deploy');

    // Assess
    assert.deepEqual(files, { 'deploy/b.yaml': 'b', 'deploy/base/a.yaml': 'a' });
  });

  it('follows a subPath through a symlinked directory inside the repository', async () => {
    // Prepare
    const root = { deploy: { prod: { 'a.yaml': 'a' }, current: { link: 'prod' } } };

    // Act
    const files = await read(root, 'deploy/current');

    // Assess
    assert.deepEqual(files, { 'deploy/current/a.yaml': 'a' });
  });

  it('refuses the revision when a symlink under the subPath leaves the repository', async () => {
    for (const target of ['/etc/passwd', '../../etc/passwd', '../deploy/../../x']) {
      // Prepare
      const root = { deploy: { 'a.yaml': 'a', 'secret.txt': { link: target } } };

      // Act
      const error = await refusal(root, 'deploy');

      // Assess
      assert.match(error.message, /symlink "deploy\/secret\.txt" points outside the repository/);
    }
  });

  it('refuses a subPath that passes through a symlink leaving the repository', async () => {
    // Prepare
    const root = { deploy: { link: '../../outside' } };

    // Act
    const error = await refusal(root, 'deploy/prod');

    // Assess
    assert.match(error.message, /subPath "deploy\/prod" leaves the repository.*symlink "deploy"/);
  });

  it('refuses symlink loops and manifest links to nothing', async () => {
    // Prepare
    const loop = { deploy: { 'a.yaml': { link: 'b.yaml' }, 'b.yaml': { link: 'a.yaml' } } };
    const dangling = { deploy: { 'a.yaml': { link: 'missing.yaml' } } };

    // Act
    const loopError = await refusal(loop, 'deploy');
    const danglingError = await refusal(dangling, 'deploy');

    // Assess
    assert.match(loopError.message, /is part of a loop/);
    assert.match(
      danglingError.message,
      /symlink "deploy\/a\.yaml" points to a file that does not exist/,
    );
  });
});

describe('reading scopes', () => {
  const root = {
    '.sourceignore': 'root rules',
    'README.md': 'readme',
    base: { 'kustomization.yaml': 'k', 'app.env': 'A=1' },
    deploy: {
      '.sourceignore': 'deploy rules',
      Kustomization: 'kz',
      'a.yaml': 'a',
      'helpers.tpl': 't',
      prod: { '.sourceignore': 'prod rules', 'b.yaml': 'b' },
    },
  };

  it('reads manifests under the subPath with the .sourceignore files above and in it', async () => {
    assert.deepEqual(await read(root, 'deploy/prod'), {
      '.sourceignore': 'root rules',
      'deploy/.sourceignore': 'deploy rules',
      'deploy/prod/.sourceignore': 'prod rules',
      'deploy/prod/b.yaml': 'b',
    });
    assert.deepEqual(Object.keys(await read(root, 'deploy')), [
      '.sourceignore',
      'deploy/.sourceignore',
      'deploy/Kustomization',
      'deploy/a.yaml',
      'deploy/prod/.sourceignore',
      'deploy/prod/b.yaml',
    ]);
  });

  it('reads every file of the repository for renderers that read a directory', async () => {
    assert.deepEqual(Object.keys(await read(root, undefined, 'repository')), [
      '.sourceignore',
      'README.md',
      'base/app.env',
      'base/kustomization.yaml',
      'deploy/.sourceignore',
      'deploy/Kustomization',
      'deploy/a.yaml',
      'deploy/helpers.tpl',
      'deploy/prod/.sourceignore',
      'deploy/prod/b.yaml',
    ]);
  });
});

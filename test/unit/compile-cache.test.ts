/**
 * Where the CLI's code cache goes and which command's cache a command line
 * uses (src/cli/compile-cache.ts); the built launcher writing and reading it
 * is tested in cli-bundle.test.ts.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { cacheNameOf, compileCacheDir } from '../../src/cli/compile-cache.ts';

describe('compileCacheDir', () => {
  it('is DRIFTLESS_COMPILE_CACHE, resolved, when set', () => {
    assert.equal(compileCacheDir({ DRIFTLESS_COMPILE_CACHE: 'cache' }), resolve('cache'));
  });

  it('is off when DRIFTLESS_COMPILE_CACHE=off', () => {
    assert.equal(
      compileCacheDir({ DRIFTLESS_COMPILE_CACHE: 'off', XDG_CACHE_HOME: '/x' }),
      undefined,
    );
  });

  it(
    'is under XDG_CACHE_HOME, else ~/.cache (on Linux)',
    { skip: process.platform !== 'linux' },
    () => {
      assert.equal(compileCacheDir({ XDG_CACHE_HOME: '/x' }), '/x/driftless/compile-cache');
      assert.equal(compileCacheDir({ HOME: '/h' }), '/h/.cache/driftless/compile-cache');
      // An empty variable counts as unset, as everywhere in driftless.
      assert.equal(
        compileCacheDir({ HOME: '/h', XDG_CACHE_HOME: '', DRIFTLESS_COMPILE_CACHE: '' }),
        '/h/.cache/driftless/compile-cache',
      );
    },
  );
});

describe('cacheNameOf', () => {
  it('names the command, wherever it stands among the flags', () => {
    assert.equal(cacheNameOf(['sync', '--track', 'web']), 'sync');
    assert.equal(cacheNameOf(['-o', 'json', 'drift', '--detect-only']), 'drift');
  });

  it('gives anything that is no command one shared name, never a name from the command line', () => {
    assert.equal(cacheNameOf(['--help']), 'other');
    assert.equal(cacheNameOf([]), 'other');
    assert.equal(cacheNameOf(['../../etc/passwd']), 'other');
  });
});

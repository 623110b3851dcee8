/**
 * Choosing a semver tag when one version is tagged twice (`v1.4.1` and
 * `1.4.1`): the same commit under both names is one choice, different
 * commits are refused rather than guessed, as a branch and a tag of one name are.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GitRefAmbiguousError } from '../../src/source/git/errors.ts';
import { selectRef, selectRefOrThrow, type RefEntry } from '../../src/source/git/select-ref.ts';

const SHA = (digit: string): string => digit.repeat(40);
const repo = 'https://h/r.git';

describe('semver tags of one version', () => {
  it('refuses two tags of the newest version on different commits, naming both', async () => {
    // Prepare
    const refs: RefEntry[] = [
      { ref: 'refs/tags/v1.4.1', oid: SHA('a') },
      { ref: 'refs/tags/1.4.1', oid: SHA('b') },
      { ref: 'refs/tags/v1.4.0', oid: SHA('c') },
    ];

    // Act
    const selection = await selectRef(refs, { kind: 'semver', range: '^1' }, repo);
    const thrown = selectRefOrThrow(refs, { kind: 'semver', range: '^1' }, repo, {
      track: 'web',
      repository: repo,
    });

    // Assess
    const message =
      'version 1.4.1 (the newest in semver range "^1") is tagged 1.4.1 and v1.4.1 in https://h/r.git, on different commits; delete one of the tags, or follow one with reference: refs/tags/<tag> instead of semver';
    assert.deepEqual(selection, { error: 'ambiguous', message });
    await assert.rejects(thrown, (error: unknown) => {
      assert.ok(error instanceof GitRefAmbiguousError, String(error));
      assert.equal(error.message, `track "web": ${message}`);
      return true;
    });
  });

  it('takes both names of one commit, an annotated tag peeled, and ties below the newest', async () => {
    // Prepare: v2.0.0 is an annotated tag object pointing at 2.0.0's commit.
    const refs: RefEntry[] = [
      { ref: 'refs/tags/1.0.0', oid: SHA('1') },
      { ref: 'refs/tags/v1.0.0', oid: SHA('2') },
      { ref: 'refs/tags/v2.0.0', oid: SHA('3'), peeled: SHA('4') },
      { ref: 'refs/tags/2.0.0', oid: SHA('4') },
    ];

    // Act
    const newest = await selectRef(refs, { kind: 'semver', range: '*' }, repo);
    const older = await selectRef(refs.slice(0, 1), { kind: 'semver', range: '^1' }, repo);

    // Assess: the name decides between two names of one commit, so the choice is stable.
    assert.deepEqual(newest, { entry: refs[3] });
    assert.deepEqual(older, { entry: refs[0] });
  });

  it('asks for the commits when the ref list has none, as a local repository lists refs', async () => {
    // Prepare
    const refs: RefEntry[] = [
      { ref: 'refs/tags/v1.4.1', oid: '' },
      { ref: 'refs/tags/1.4.1', oid: '' },
    ];
    const asked: string[] = [];
    const commitOf = (commits: Record<string, string>) => async (entry: RefEntry) => {
      asked.push(entry.ref);
      return commits[entry.ref]!;
    };

    // Act
    const differ = await selectRef(
      refs,
      { kind: 'semver', range: '^1' },
      repo,
      commitOf({ 'refs/tags/v1.4.1': SHA('a'), 'refs/tags/1.4.1': SHA('b') }),
    );
    const same = await selectRef(
      refs,
      { kind: 'semver', range: '^1' },
      repo,
      commitOf({ 'refs/tags/v1.4.1': SHA('a'), 'refs/tags/1.4.1': SHA('a') }),
    );

    // Assess
    assert.ok('error' in differ && differ.error === 'ambiguous', JSON.stringify(differ));
    assert.deepEqual(same, { entry: refs[1] });
    assert.deepEqual(asked.sort(), [
      'refs/tags/1.4.1',
      'refs/tags/1.4.1',
      'refs/tags/v1.4.1',
      'refs/tags/v1.4.1',
    ]);
  });
});

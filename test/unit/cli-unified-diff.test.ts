import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { palette } from '../../src/cli/colours.ts';
import { colourDiff } from '../../src/cli/unified-diff.ts';
import { unifiedDiff } from '../../src/unified-diff.ts';

describe('unifiedDiff', () => {
  it('shows a change with three lines of context under file headers', () => {
    // Prepare
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', ''].join('\n');
    const after = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h', ''].join('\n');

    // Act
    const diff = unifiedDiff('live/x', 'desired/x', before, after);

    // Assess
    assert.equal(
      diff,
      [
        '--- live/x',
        '+++ desired/x',
        '@@ -2,7 +2,7 @@',
        ' b',
        ' c',
        ' d',
        '-e',
        '+E',
        ' f',
        ' g',
        ' h',
        '',
      ].join('\n'),
    );
  });

  it('shows a new object as all additions', () => {
    // Act
    const diff = unifiedDiff('/dev/null', 'desired/x', '', 'a: 1\nb: 2\n');

    // Assess
    assert.equal(
      diff,
      ['--- /dev/null', '+++ desired/x', '@@ -0,0 +1,2 @@', '+a: 1', '+b: 2', ''].join('\n'),
    );
  });

  it('is empty when the texts are equal', () => {
    // Act
    const diff = unifiedDiff('a', 'b', 'same\n', 'same\n');

    // Assess
    assert.equal(diff, '');
  });

  it('colours removals red and additions green, headers aside', () => {
    // Prepare
    const diff = unifiedDiff('a', 'b', 'x\n', 'y\n');

    // Act
    const coloured = colourDiff(diff, palette(true));

    // Assess
    assert.ok(coloured.includes('\u001b[31m-x\u001b[39m'));
    assert.ok(coloured.includes('\u001b[32m+y\u001b[39m'));
    assert.ok(coloured.includes('\u001b[1m--- a\u001b[22m'));
    assert.equal(colourDiff(diff, palette(false)), diff);
  });
});

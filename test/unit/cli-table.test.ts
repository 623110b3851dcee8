import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatChangeset, formatCounts } from '../../src/cli/changeset-summary.ts';
import { formatChanges } from '../../src/cli/diff-command.ts';
import { palette, stripAnsi } from '../../src/cli/colours.ts';
import { formatTable } from '../../src/cli/table.ts';

describe('formatTable', () => {
  it('aligns columns two spaces apart and leaves the last column unpadded', () => {
    // Act
    const table = formatTable(
      ['NAME', 'ACTION', 'ERROR'],
      [
        ['ConfigMap/apps/settings', 'created', ''],
        ['Job/x', 'failed', 'Job/x: boom'],
      ],
    );

    // Assess
    assert.equal(
      table,
      [
        'NAME                     ACTION   ERROR',
        'ConfigMap/apps/settings  created',
        'Job/x                    failed   Job/x: boom',
      ].join('\n'),
    );
  });

  it('measures coloured cells by what the terminal shows', () => {
    // Prepare
    const colours = palette(true);

    // Act
    const table = formatTable(
      ['A', 'B'],
      [
        [colours.green('created'), 'x'],
        ['unchanged', 'y'],
      ],
    );

    // Assess
    assert.equal(stripAnsi(table), ['A          B', 'created    x', 'unchanged  y'].join('\n'));
    assert.notEqual(table, stripAnsi(table));
  });
});

describe('formatChangeset', () => {
  it('lists each object with its action and error, then counts per action', () => {
    // Prepare
    const changeset = [
      { subject: 'Deployment/apps/web', action: 'configured' as const },
      { subject: 'ConfigMap/apps/a', action: 'unchanged' as const },
      { subject: 'ConfigMap/apps/b', action: 'created' as const },
      { subject: 'Job/apps/migrate', action: 'failed' as const, error: 'Job/apps/migrate: denied' },
      {
        subject: 'ConfigMap/apps/c',
        action: 'skipped' as const,
        reason: 'update strategy "never"',
      },
      { subject: 'ConfigMap/apps/d', action: 'unchanged' as const },
    ];

    // Act
    const text = formatChangeset(changeset, palette(false));

    // Assess
    assert.equal(
      text,
      [
        'SUBJECT              ACTION      ERROR',
        'Deployment/apps/web  configured',
        'ConfigMap/apps/a     unchanged',
        'ConfigMap/apps/b     created',
        'Job/apps/migrate     failed      denied',
        'ConfigMap/apps/c     skipped     update strategy "never"',
        'ConfigMap/apps/d     unchanged',
        '6 objects: 1 created, 1 configured, 2 unchanged, 1 skipped, 1 failed',
      ].join('\n'),
    );
  });

  it('names a failed object once: in its row, not again before its error', () => {
    // Prepare: an error starts with its subject (ChangeSetEntry); one may be about another object.
    const changeset = [
      {
        subject: 'ConfigMap/apps/c',
        action: 'failed' as const,
        error: 'ConfigMap/apps/c: admission webhook denied the request',
      },
      {
        subject: 'Deployment/apps/web',
        action: 'failed' as const,
        error: 'CustomResourceDefinition/widgets.example.com: not established',
      },
    ];

    // Act
    const text = formatChangeset(changeset, palette(false));

    // Assess
    assert.deepEqual(text.split('\n').slice(1, 3), [
      'ConfigMap/apps/c     failed  admission webhook denied the request',
      'Deployment/apps/web  failed  CustomResourceDefinition/widgets.example.com: not established',
    ]);
  });

  it('says so when nothing was in the changeset', () => {
    // Act
    const text = formatCounts([], palette(false));

    // Assess
    assert.equal(text, '0 objects');
  });

  it('colours actions only when colour is on', () => {
    // Prepare
    const changeset = [{ subject: 'Job/x', action: 'failed' as const, error: 'Job/x: boom' }];

    // Act
    const coloured = formatChangeset(changeset, palette(true));
    const plain = formatChangeset(changeset, palette(false));

    // Assess
    assert.equal(stripAnsi(coloured), plain);
    assert.ok(coloured.includes('\u001b[31mfailed\u001b[39m'));
  });
});

describe('formatChanges (diff)', () => {
  it('prints a refused dry-run under the heading that names the object, without naming it again', () => {
    // Prepare
    const changes = [
      {
        subject: 'ConfigMap/apps/a',
        action: 'update' as const,
        error: 'ConfigMap/apps/a: admission webhook "policy" denied the request',
      },
      {
        subject: 'ConfigMap/apps/b',
        action: 'create' as const,
        error: 'the server could not be reached',
      },
    ];

    // Act
    const text = formatChanges('web', 'a'.repeat(40), changes, palette(false));

    // Assess
    assert.equal(
      text.split('\n').slice(0, 5).join('\n'),
      [
        'ConfigMap/apps/a: update',
        'admission webhook "policy" denied the request',
        '',
        'ConfigMap/apps/b: create',
        'the server could not be reached',
      ].join('\n'),
    );
  });
});

/**
 * The configuration examples users copy from the docs: every ```yaml block of
 * README.md and docs/*.md is a whole driftless.yaml, loaded by the real config
 * loader. A block whose first line is `# invalid: <text>` shows a mistake and
 * must be refused with a message containing `<text>`; every other block must
 * load. A failure names the file and the line of the block. The defaults its
 * tables state are compared with what the loader fills in.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import {
  ConfigError,
  formatConfigIssue,
  parseConfig,
  parseDuration,
} from '../../src/config/index.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Markdown files whose yaml blocks are config examples, relative to the repository root. */
const MARKDOWN = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/** Whole example files shipped beside the docs. */
const EXAMPLE_FILES = ['infra/driftless.example.yaml'];

const INVALID_MARKER = /^#\s*invalid:\s*(.+?)\s*$/;

/** One fenced yaml block. */
interface YamlBlock {
  readonly file: string;
  /** 1-based line of the block's first content line (the one after the fence). */
  readonly line: number;
  readonly text: string;
  /** From a `# invalid: <text>` first line: what the refusal must say. */
  readonly invalid?: string;
}

/** The ```yaml blocks of a Markdown text, content unindented by the fence's own indent. */
function yamlBlocks(file: string, markdown: string): YamlBlock[] {
  const lines = markdown.split('\n');
  const blocks: YamlBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```ya?ml\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1]?.length ?? 0;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end] ?? '')) end++;
    // An unclosed fence would swallow the rest of the file: say so rather than load it.
    assert.ok(end < lines.length, `${file}:${i + 1}: the yaml block is never closed`);
    const content = lines.slice(start, end).map((line) => line.slice(indent));
    const invalid = INVALID_MARKER.exec(content[0] ?? '')?.[1];
    blocks.push({
      file,
      line: start + 1,
      text: `${content.join('\n')}\n`,
      ...(invalid === undefined ? {} : { invalid }),
    });
    i = end;
  }
  return blocks;
}

/** The loader's messages for `block`, with YAML line numbers counted in the Markdown file. */
function refusal(block: YamlBlock): string | undefined {
  try {
    parseConfig(block.text, block.file);
    return undefined;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.issues
      .map((issue) =>
        formatConfigIssue(
          issue.line === undefined ? issue : { ...issue, line: issue.line + block.line - 1 },
        ),
      )
      .join('\n');
  }
}

/** Asserts what the block claims: it loads, or it is refused with its marker's text. */
function checkBlock(block: YamlBlock): void {
  const where = `${block.file}:${block.line}`;
  const messages = refusal(block);
  if (block.invalid === undefined) {
    assert.equal(messages, undefined, `${where}: the example is refused:\n${messages}`);
    return;
  }
  assert.notEqual(
    messages,
    undefined,
    `${where}: the example marked "# invalid: ${block.invalid}" loads without error`,
  );
  assert.ok(
    messages?.includes(block.invalid),
    `${where}: expected a refusal containing "${block.invalid}", got:\n${messages}`,
  );
}

const blocksByFile = new Map(
  MARKDOWN.map((file) => [file, yamlBlocks(file, readFileSync(`${ROOT}${file}`, 'utf8'))]),
);

describe('yaml examples in the docs', () => {
  for (const [file, blocks] of blocksByFile) {
    for (const block of blocks) {
      const expectation =
        block.invalid === undefined ? 'loads' : `is refused with "${block.invalid}"`;
      it(`${file}:${block.line} ${expectation}`, () => checkBlock(block));
    }
  }

  it('finds the examples of docs/configuration.md, valid and invalid ones', () => {
    // Prepare
    const blocks = blocksByFile.get('docs/configuration.md') ?? [];

    // Act
    const invalid = blocks.filter((block) => block.invalid !== undefined);

    // Assess: a broken extractor must not pass by finding nothing to check.
    assert.ok(blocks.length - invalid.length >= 10, `only ${blocks.length - invalid.length} valid`);
    assert.ok(invalid.length >= 10, `only ${invalid.length} invalid`);
  });
});

describe('the block checker', () => {
  it('fails a valid-looking block the loader refuses, naming its line', () => {
    // Prepare
    const block = { file: 'docs/x.md', line: 7, text: 'tracks:\n  - name: web\n' };

    // Act and Assess
    assert.throws(
      () => checkBlock(block),
      (error: Error) =>
        error.message.includes('docs/x.md:7: the example is refused') &&
        error.message.includes(
          'tracks[0].repository: is required (or bucket: for a bucket source)',
        ),
    );
  });

  it('fails an invalid block refused for another reason than its marker says', () => {
    // Prepare
    const block = {
      file: 'docs/x.md',
      line: 3,
      text: '# invalid: unknown field\ntracks:\n  - name: Web\n    repository: /r\n',
      invalid: 'unknown field',
    };

    // Act and Assess
    assert.throws(
      () => checkBlock(block),
      (error: Error) => error.message.includes('docs/x.md:3: expected a refusal containing'),
    );
  });

  it('counts YAML syntax error lines in the Markdown file', () => {
    // Prepare
    const block = {
      file: 'docs/x.md',
      line: 40,
      text: 'tracks:\n  - name: a\n   repository: /r\n',
    };

    // Act
    const messages = refusal(block);

    // Assess: line 3 of the block is line 42 of the file.
    assert.match(messages ?? '', /^docs\/x\.md:42:4: invalid YAML/);
  });

  it('reads fences, their indentation and the invalid marker', () => {
    // Prepare
    const markdown = [
      '# Title',
      '```yaml',
      'tracks: []',
      '```',
      '- item:',
      '  ```yaml',
      '  # invalid: is required',
      '  tracks: [{}]',
      '  ```',
      '```text',
      'not: yaml',
      '```',
    ].join('\n');

    // Act
    const blocks = yamlBlocks('docs/x.md', markdown);

    // Assess
    assert.deepEqual(blocks, [
      { file: 'docs/x.md', line: 3, text: 'tracks: []\n' },
      {
        file: 'docs/x.md',
        line: 7,
        text: '# invalid: is required\ntracks: [{}]\n',
        invalid: 'is required',
      },
    ]);
  });
});

/** Track fields whose documented default is a duration and which the loader keeps in ms. */
const DURATIONS = new Set(['interval', 'timeout']);

/**
 * The `field` and `default` cells of the first table after `heading`, for
 * rows whose default says something checkable: a `value` in backticks, or
 * "none" (the loader leaves the field unset). "required" and prose are skipped.
 */
function documentedDefaults(markdown: string, heading: string): [string, unknown][] {
  const from = markdown.indexOf(`\n${heading}\n`);
  assert.ok(from >= 0, `docs/configuration.md has no "${heading}" section`);
  const lines = markdown.slice(from).split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const rows: [string, unknown][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [field = '', , fallback = ''] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const name = /^`([^`]+)`/.exec(field)?.[1] ?? '';
    const value = /^`([^`]*)`$/.exec(fallback)?.[1];
    if (value !== undefined) {
      rows.push([name, DURATIONS.has(name) ? parseDuration(value) : load(value)]);
    } else if (fallback.startsWith('none')) {
      rows.push([name, undefined]);
    }
  }
  return rows;
}

describe('defaults documented in docs/configuration.md', () => {
  const markdown = readFileSync(`${ROOT}docs/configuration.md`, 'utf8');

  it('are the defaults the loader gives a track', () => {
    // Prepare
    const rows = documentedDefaults(markdown, '## `tracks`');

    // Act
    const [track] = parseConfig('tracks: [{name: web, repository: /srv/git/web}]', 'x').tracks;

    // Assess
    assert.ok(rows.length >= 15, `only ${rows.length} documented defaults found`);
    const fields = track as unknown as Record<string, unknown>;
    for (const [name, documented] of rows) {
      assert.deepEqual(fields[name], documented, `${name}: the documented default is wrong`);
    }
  });

  it('are the defaults the loader gives the store', () => {
    // Prepare
    const rows = documentedDefaults(markdown, '## `store`');

    // Act
    const fs = parseConfig('', 'x').store as Record<string, unknown>;
    const s3 = parseConfig('store: {type: s3, bucket: b}', 'x').store as Record<string, unknown>;

    // Assess: `type` and `path` are the default (fs) store's, the others an s3 store's.
    assert.ok(rows.length >= 4, `only ${rows.length} documented defaults found`);
    for (const [name, documented] of rows) {
      const field = name.replace(/^store\./, '');
      const store = field === 'type' || field === 'path' ? fs : s3;
      assert.deepEqual(store[field], documented, `${name}: the documented default is wrong`);
    }
  });
});

describe('example files', () => {
  for (const file of EXAMPLE_FILES) {
    it(`${file} loads`, () => {
      const text = readFileSync(`${ROOT}${file}`, 'utf8');
      assert.doesNotThrow(() => parseConfig(text, file));
    });
  }
});

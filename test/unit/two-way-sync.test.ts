/**
 * Two-way sync's pure parts: the rules, `rules`/`writeBack` in the config,
 * and editing manifest files so that only the changed fields change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { editManifests } from '../../src/source/edit-manifests.ts';
import { syncToOf } from '../../src/sync/sync-rules.ts';
import { writeBackBranch } from '../../src/sync/write-back.ts';

function trackOf(extra: string) {
  return parseConfig(
    `tracks:\n  - name: web\n    repository: https://git.example.com/org/web.git\n${extra}`,
    'driftless.yaml',
  ).tracks[0]!;
}

function problems(extra: string): string[] {
  try {
    trackOf(extra);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
  }
  assert.fail('expected a refusal');
}

describe('sync rules', () => {
  const track = trackOf(`    rules:
      - {apiGroups: [""], resources: [configmaps], labels: {team: ops}, syncTo: git}
      - {apiGroups: [apps], resources: [deployments], names: ["batch-*"], syncTo: ignore}
      - {namespaces: ["sandbox-*"], syncTo: ignore}
`);
  const subject = (over: Partial<Parameters<typeof syncToOf>[1]>) => ({
    group: '',
    resource: 'configmaps',
    namespace: 'apps',
    name: 'settings',
    labels: {},
    ...over,
  });

  it('takes the first matching rule, and Git when none matches', () => {
    assert.equal(syncToOf(track, subject({ labels: { team: 'ops' } })), 'git');
    assert.equal(syncToOf(track, subject({ labels: { team: 'dev' } })), 'kubernetes');
    assert.equal(
      syncToOf(track, subject({ group: 'apps', resource: 'deployments', name: 'batch-nightly' })),
      'ignore',
    );
    assert.equal(
      syncToOf(track, subject({ group: 'apps', resource: 'deployments', name: 'web' })),
      'kubernetes',
    );
    // Earlier rules win: an ops ConfigMap in a sandbox namespace is still written back.
    assert.equal(
      syncToOf(track, subject({ namespace: 'sandbox-1', labels: { team: 'ops' } })),
      'git',
    );
    assert.equal(syncToOf(track, subject({ namespace: 'sandbox-1' })), 'ignore');
    // A cluster-scoped object matches no namespaces list; unknown labels match no labels rule.
    assert.equal(syncToOf(track, subject({ namespace: undefined })), 'kubernetes');
    assert.equal(syncToOf(track, subject({ labels: undefined })), 'kubernetes');
  });

  it('writes back to writeBack.branch, else to the branch the track follows', () => {
    assert.equal(writeBackBranch(track), 'main');
    assert.equal(writeBackBranch(trackOf('    reference: refs/heads/live\n')), 'live');
    assert.equal(
      writeBackBranch(trackOf('    reference: v1.2.0\n    writeBack: {branch: main}\n')),
      'main',
    );
  });

  it('needs adopt and named resources to include objects new to Git', () => {
    assert.deepEqual(problems('    rules: [{syncTo: git}]\n    writeBack: {include: true}\n'), [
      'tracks[0].writeBack.include: needs adopt: true: objects added to Git from the cluster are taken over by the next sync',
      'tracks[0].rules[0].resources: is required with writeBack.include: the resources to look for new objects in',
    ]);
  });

  it('refuses syncTo: git where there is no branch to commit to', () => {
    const git = '    rules: [{syncTo: git}]\n';
    assert.deepEqual(problems(`${git}    reference: v1.2.0\n`), [
      'tracks[0].writeBack.branch: is required: syncTo: git commits to a branch, and the track follows a tag, a commit or a semver range',
    ]);
    assert.deepEqual(problems(`${git}    semver: ">=1"\n`), [
      'tracks[0].writeBack.branch: is required: syncTo: git commits to a branch, and the track follows a tag, a commit or a semver range',
    ]);
    assert.match(problems('    rules: [{syncTo: both}]\n')[0]!, /rules\[0\]\.syncTo/);
    assert.match(
      problems('    rules: [{resource: [configmaps], syncTo: git}]\n')[0]!,
      /resource: unknown field; did you mean resources/,
    );
  });
});

const FILE = `# ops settings
apiVersion: v1
kind: ConfigMap
metadata:
  name: ops   # ops'
  namespace: apps
data:
  value: one # tuned by hand
  list: [a, b]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other,   namespace: apps}
data: {x:   "1"}
`;

function change(fields: WriteBackChange['fields'], name = 'ops'): WriteBackChange {
  return {
    subject: `ConfigMap/apps/${name}`,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name,
    namespace: 'apps',
    file: 'settings.yaml',
    line: 2,
    fields,
  };
}

describe('editManifests', () => {
  const read = (file: string) => (file === 'settings.yaml' ? FILE : undefined);

  it('rewrites only the changed fields, keeping comments and the other documents byte for byte', () => {
    // Act
    const edits = editManifests(read, [
      change([
        { path: '/data/value', value: 'two', base: 'one' },
        { path: '/data/list', value: ['a', 'b', 'c'], base: ['a', 'b'] },
        { path: '/metadata/labels/added~1by', value: 'hand' },
      ]),
    ]);

    // Assess
    const text = edits.files.get('settings.yaml');
    assert.ok(text !== undefined);
    assert.deepEqual(edits.written, ['ConfigMap/apps/ops']);
    assert.deepEqual(edits.conflicts, []);
    assert.match(text, /^# ops settings\napiVersion: v1\n/);
    assert.match(text, /value: two # tuned by hand/);
    assert.match(text, /name: ops {3}# ops'/);
    assert.match(text, /added\/by: hand/);
    // A changed list is written whole, in the library's block style.
    assert.match(text, /list:\n\s+- a\n\s+- b\n\s+- c\n/);
    assert.ok(
      text.endsWith(
        '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other,   namespace: apps}\ndata: {x:   "1"}\n',
      ),
      text,
    );
  });

  it('removes a field the cluster removed, and leaves a file Git already matches alone', () => {
    const removed = editManifests(read, [change([{ path: '/data/value', base: 'one' }])]);
    assert.doesNotMatch(removed.files.get('settings.yaml') ?? '', /value:/);
    const same = editManifests(read, [
      change([{ path: '/data/value', value: 'one', base: 'zero' }]),
    ]);
    assert.equal(same.files.size, 0);
    assert.deepEqual(same.written, ['ConfigMap/apps/ops']);
  });

  it('lets Git win a field it changed since, and reports it', () => {
    const edits = editManifests(read, [
      change([
        { path: '/data/value', value: 'two', base: 'zero' },
        { path: '/data/other', value: 'new' },
      ]),
    ]);
    assert.deepEqual(edits.conflicts, [
      {
        subject: 'ConfigMap/apps/ops',
        path: '/data/value',
        message: 'Git changed it since the revision compared with: Git wins',
      },
    ]);
    const text = edits.files.get('settings.yaml') ?? '';
    assert.match(text, /value: one/);
    assert.match(text, /other: new/);
  });

  it('adds objects new to Git as documents of their own, in new or existing files', () => {
    const add = (name: string, file: string): WriteBackChange => ({
      ...change([], name),
      file,
      line: 0,
      add: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'apps' },
        data: { a: '1' },
      },
    });
    const edits = editManifests(read, [
      add('fresh', 'apps/configmap-fresh.yaml'),
      add('extra', 'settings.yaml'),
      add('ops', 'settings.yaml'),
    ]);
    assert.equal(
      edits.files.get('apps/configmap-fresh.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n  namespace: apps\ndata:\n  a: "1"\n',
    );
    const settings = edits.files.get('settings.yaml') ?? '';
    assert.ok(settings.startsWith(FILE), 'the file as it was, then the new document');
    assert.match(
      settings.slice(FILE.length),
      /^---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n {2}name: extra\n/,
    );
    // One that Git holds already is not added twice: Git has it.
    assert.deepEqual(
      edits.conflicts.map((c) => c.subject),
      ['ConfigMap/apps/ops'],
    );
    assert.deepEqual(edits.written, ['ConfigMap/apps/fresh', 'ConfigMap/apps/extra']);
  });

  it('quotes new strings a YAML 1.1 reader (kubectl) would take for another type', () => {
    // Strings that YAML 1.2 reads as strings but YAML 1.1 (go-yaml v2, under kubectl) does not.
    const tricky = [
      'yes',
      'Y',
      'n',
      'NO',
      'on',
      'Off',
      'y',
      '~',
      '0755',
      '0o17',
      '+0x1F',
      '0X1F',
      '1_000',
      '-0b101',
      '1:20',
      '1:20.5',
      '1e3',
      '.5',
      '+.inf',
      '-.Inf',
      '.NaN',
      '2001-12-14',
      '2001-12-14 21:59:43.10 -5',
      '<<',
      'True',
      'null',
      '1.10',
    ];
    const values = Object.fromEntries(tricky.map((value, i) => [`k${i}`, value]));
    const edits = editManifests(
      (file) => (file === 'settings.yaml' ? FILE : undefined),
      [
        change([
          { path: '/data/value', value: 'off', base: 'one' },
          { path: '/data/added', value: 'yes' },
          { path: '/data/o', value: 'on' },
          { path: '/data/on', value: 'plain' },
          { path: '/data/nested', value: values },
          { path: '/metadata/annotations/yes', value: 'no' },
          { path: '/data/list', value: ['a', 'off', 'b'], base: ['a', 'b'] },
        ]),
        {
          ...change([], 'fresh'),
          file: 'fresh.yaml',
          line: 0,
          add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fresh' }, data: values },
        },
      ],
    );
    const text = edits.files.get('settings.yaml') ?? '';
    assert.match(text, /value: "off" # tuned by hand/);
    assert.match(text, /added: "yes"\n/);
    assert.match(text, /o: "on"\n/);
    assert.match(text, /"on": plain\n/);
    assert.match(text, /"yes": "no"\n/);
    assert.match(text, /- "off"\n/);
    // Untouched lines and documents are as they were.
    assert.match(text, /^# ops settings\napiVersion: v1\nkind: ConfigMap\nmetadata:\n/);
    assert.ok(
      text.endsWith('metadata: {name: other,   namespace: apps}\ndata: {x:   "1"}\n'),
      text,
    );
    // Read as YAML 1.1, everything new is still a string.
    const [ops] = parseAllDocuments(text, { version: '1.1' }).map((doc) => doc.toJS());
    assert.deepEqual(ops.data, {
      value: 'off',
      list: ['a', 'off', 'b'],
      added: 'yes',
      o: 'on',
      on: 'plain',
      nested: values,
    });
    assert.deepEqual(ops.metadata.annotations, { yes: 'no' });
    const fresh = parse(edits.files.get('fresh.yaml') ?? '', { version: '1.1' });
    assert.deepEqual(fresh.data, values);
  });

  it('takes a key of digits as a map key, not a list index', () => {
    const before =
      'kind: ConfigMap\nmetadata:\n  name: ops\n  namespace: apps\ndata:\n  "80": http\n';
    const edits = editManifests(
      () => before,
      [
        change([
          { path: '/data/80', value: 'https', base: 'http' },
          { path: '/data/443', value: 'tls' },
        ]),
      ],
    );
    assert.deepEqual(edits.conflicts, []);
    assert.equal(
      edits.files.get('settings.yaml'),
      'kind: ConfigMap\nmetadata:\n  name: ops\n  namespace: apps\ndata:\n  "80": https\n  "443": tls\n',
    );
  });

  it('keeps untouched flow collections in an edited document as written', () => {
    const file = (padded: boolean) => {
      const [open, close] = padded ? ['{ ', ' }'] : ['{', '}'];
      return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ops\n  namespace: apps\n  labels: ${open}team: ops${close}\ndata:\n  value: one\n  ports: ${padded ? '[ 80, 443 ]' : '[80, 443]'}\n`;
    };
    for (const padded of [false, true]) {
      const before = file(padded);
      const edits = editManifests(
        () => before,
        [change([{ path: '/data/value', value: 'two', base: 'one' }])],
      );
      assert.equal(edits.files.get('settings.yaml'), before.replace('value: one', 'value: two'));
    }
  });

  it('refuses objects whose file or document left Git', () => {
    const edits = editManifests(read, [
      { ...change([{ path: '/data/value', value: 'x' }]), file: 'gone.yaml' },
      change([{ path: '/data/value', value: 'x' }], 'renamed'),
    ]);
    assert.deepEqual(
      edits.refused.map((r) => r.error),
      [
        'gone.yaml is no longer in Git',
        'settings.yaml has no document for ConfigMap/apps/renamed any more',
      ],
    );
  });
});

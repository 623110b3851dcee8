/**
 * Secret hygiene: Secret values masked with a digest (diff, drift), and the
 * process-wide redactor that takes known secret values out of logs, CLI
 * output, status and errors.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { maskSecret, maskValue } from '../../src/apply/mask-secret.ts';
import { jsonLogger } from '../../src/logger.ts';
import {
  addSecretValues,
  forgetSecretValuesForTests,
  redactAlongside,
  redactDeep,
  redactError,
  redactSecrets,
} from '../../src/redact.ts';
import type { PlannedChange } from '../../src/apply/preview-changes.ts';
import { showChange } from '../../src/cli/diff-command.ts';
import { objectKey, refOf, type KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import { renderManifests } from '../../src/render/render-manifests.ts';
import { judgeObjects } from '../../src/sync/object-statuses.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('maskSecret', () => {
  const secret = (password: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'db',
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          data: { password: b64(password) },
        }),
        team: 'web',
      },
    },
    data: { password: b64(password), user: b64('admin') },
    stringData: { token: `${password}-token` },
  });

  it('masks data, stringData and the last-applied copy; nothing of the value or its base64 remains', () => {
    const masked = maskSecret(secret('hunter2-value'));
    const text = JSON.stringify(masked);
    assert.ok(!text.includes('hunter2-value') && !text.includes(b64('hunter2-value')));
    assert.equal(masked.data.password, maskValue('hunter2-value'));
    assert.equal(masked.stringData.token, maskValue('hunter2-value-token'));
    assert.equal(masked.metadata.annotations.team, 'web');
    const lastApplied = JSON.parse(
      masked.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'],
    ) as { data: { password: string } };
    assert.equal(lastApplied.data.password, maskValue('hunter2-value'));
  });

  it('gives equal values equal masks and different values different ones (data and stringData alike)', () => {
    assert.equal(maskSecret(secret('a')).data.password, maskSecret(secret('a')).data.password);
    assert.notEqual(maskSecret(secret('a')).data.password, maskSecret(secret('b')).data.password);
    assert.equal(
      maskValue('same'),
      maskSecret({ apiVersion: 'v1', kind: 'Secret', data: { k: b64('same') } }).data.k,
    );
  });

  it('leaves other kinds, and Secrets of other groups, as they are', () => {
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', data: { a: 'b' } };
    assert.equal(maskSecret(configMap), configMap);
    const custom = { apiVersion: 'example.com/v1', kind: 'Secret', data: { a: 'b' } };
    assert.equal(maskSecret(custom), custom);
  });
});

describe('redactSecrets', () => {
  afterEach(() => forgetSecretValuesForTests());

  it('hides known values, their base64 and JSON-escaped forms, longest first', () => {
    addSecretValues(['s3cr3t-value', 's3cr3t-value-longer', 'line\nbreak"quote']);
    assert.equal(redactSecrets('a s3cr3t-value-longer b s3cr3t-value'), 'a *** b ***');
    assert.equal(redactSecrets(`x ${b64('s3cr3t-value')} y`), 'x *** y');
    assert.equal(redactSecrets(JSON.stringify({ v: 'line\nbreak"quote' })), '{"v":"***"}');
  });

  it('leaves values shorter than four characters alone in free text', () => {
    addSecretValues(['ab', 'on']);
    assert.equal(redactSecrets('on and on, ab'), 'on and on, ab');
  });

  it('redacts deep data, errors and every log line', () => {
    addSecretValues(['planted-log-value']);
    assert.deepEqual(redactDeep({ a: ['x planted-log-value'], 'planted-log-value': 1 }), {
      a: ['x ***'],
      '***': 1,
    });
    const error = redactError(new Error('server said: planted-log-value is invalid'));
    assert.equal(error.message, 'server said: *** is invalid');
    assert.ok(!error.stack?.includes('planted-log-value'));
    const lines: string[] = [];
    jsonLogger((line) => lines.push(line)).error('apply failed', {
      error: new Error('bad value planted-log-value'),
      detail: 'planted-log-value',
    });
    assert.equal(lines.length, 1);
    assert.ok(!lines[0]!.includes('planted-log-value'), lines[0]);
  });

  it('changes nothing while no value is known', () => {
    const data = { a: 'b' };
    assert.equal(redactDeep(data), data);
    assert.equal(redactSecrets('text'), 'text');
  });
});

describe('secret values on the other side of a comparison', () => {
  afterEach(() => forgetSecretValuesForTests());
  const configMap = (data: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'settings', namespace: 'apps' },
    data,
  });

  it('redacts what sits where the reference holds a secret value, and nothing else', () => {
    addSecretValues(['new-rotated-password']);
    assert.deepEqual(
      redactAlongside(
        { data: { password: 'old-password-value', level: 'debug' }, list: ['a', 'old-b'] },
        {
          data: { password: 'new-rotated-password', level: 'trace' },
          list: ['a', 'new-rotated-password'],
        },
      ),
      { data: { password: '***', level: 'debug' }, list: ['a', '***'] },
    );
  });

  it('pairs named list items by name: an env var added before the secret one moves it', () => {
    addSecretValues(['new-rotated-password']);
    const env = (items: [string, string][]) => ({
      env: items.map(([name, value]) => ({ name, value })),
    });
    assert.deepEqual(
      redactAlongside(
        env([
          ['MODE', 'prod'],
          ['DB_PASS', 'old-password-value'],
        ]),
        env([
          ['ADDED', 'x'],
          ['MODE', 'prod'],
          ['DB_PASS', 'new-rotated-password'],
        ]),
      ),
      env([
        ['MODE', 'prod'],
        ['DB_PASS', '***'],
      ]),
    );
  });

  it('diff shows neither the earlier nor the current substituted value of a ConfigMap', () => {
    addSecretValues(['PLANTED_NEW_VALUE_26']);
    const shown = showChange(
      {
        subject: 'ConfigMap/apps/settings',
        action: 'update',
        live: configMap({ password: 'PLANTED_OLD_VALUE_25', level: 'debug' }),
        desired: configMap({ password: 'PLANTED_NEW_VALUE_26', level: 'debug' }),
      },
      true,
    );
    // The output redactor hides the current value; the earlier one must already be gone.
    assert.ok(!shown.diff?.includes('PLANTED_OLD_VALUE_25'), shown.diff);
    assert.match(shown.diff ?? '', /password: '\*\*\*'|password: \*\*\*/);
  });

  it('diff shows an object to prune by its name alone when the track puts secret values in objects', () => {
    const prune: PlannedChange = {
      subject: 'ConfigMap/apps/settings',
      action: 'prune',
      live: configMap({ conf: 'PLANTED_DECRYPTED_4B' }),
    };
    const hidden = showChange(prune, true);
    const plain = showChange(prune, false);
    assert.ok(!hidden.diff?.includes('PLANTED_DECRYPTED_4B'), hidden.diff);
    assert.match(hidden.diff ?? '', /name: settings/);
    assert.match(hidden.note ?? '', /values not shown/);
    assert.match(plain.diff ?? '', /PLANTED_DECRYPTED_4B/);
  });

  it("a drift patch's test of the cluster's value hides an earlier substituted value", async () => {
    addSecretValues(['PLANTED_NEW_VALUE_26']);
    const [object] = renderManifests(
      [
        {
          path: 'settings.yaml',
          content: new TextEncoder().encode(
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {password: PLANTED_NEW_VALUE_26}\n',
          ),
        },
      ],
      { scopeOf: () => 'Namespaced' },
    ).objects;
    const manifest = object!.manifest as KubeObject;
    const live = { ...manifest, data: { password: 'PLANTED_OLD_VALUE_25' } };
    const track = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git}]',
      'driftless.yaml',
    ).tracks[0]!;

    const observed = await judgeObjects(track, {
      selected: [object!],
      live: { found: new Map([[objectKey(refOf(manifest)), live]]), errors: new Map() },
      report: {
        drifted: [
          {
            subject: object!.subject,
            ref: refOf(manifest),
            patch: [{ op: 'replace', path: '/data/password', value: 'PLANTED_NEW_VALUE_26' }],
            changedBy: ['kubectl-edit'],
          },
        ],
        missing: [],
        errors: [],
        checked: 1,
        suspects: 1,
      },
      failed: {},
    });

    const text = JSON.stringify(observed);
    assert.ok(!text.includes('PLANTED_OLD_VALUE_25'), text);
    assert.ok(!text.includes('PLANTED_NEW_VALUE_26'), text);
  });
});

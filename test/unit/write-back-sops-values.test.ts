/**
 * Write-back of objects of a SOPS-encrypted file (two-way sync): the cluster's
 * values the file is encrypted again with are secret values from then on,
 * whatever the object's kind — a ConfigMap's as a Secret's — so no log,
 * status, history or error shows them; a value the file's rule leaves in clear
 * text is not one. A Secret's `data` key the rule leaves in clear is refused,
 * as its `stringData` keys are. The real sops and age; planted markers.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import type { ChangedObject } from '../../src/drift/write-back-changes.ts';
import { holdsSecretValue, redactSecrets } from '../../src/redact.ts';
import type { RenderedObject } from '../../src/render/types.ts';
import { reencryptedObjects } from '../../src/sync/reencrypt-secret.ts';
import type { SecretDeps } from '../../src/sync/resolve-secrets.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { generateAgeKey, sopsEncrypt, type AgeKey } from '../harness/sops.ts';

/** Planted in the cluster's objects: must never be printed once written back encrypted. */
const CONFIG_MARKER = 'planted-configmap-value-3b9e71';
const DATA_MARKER = 'planted-secret-data-5d20c4';
/** A label the file's rule leaves in clear text: no secret. */
const LABEL = 'planted-clear-label-81fa06';

const track = parseConfig(
  [
    'tracks:',
    '  - name: ops',
    '    repository: https://git.example.com/ops.git',
    '    decryption: {provider: sops, keys: ["env:AGE_KEY"]}',
  ].join('\n'),
  'driftless.yaml',
).tracks[0]!;

/** An object of `file` as the revision has it (decrypted), changed in the cluster to `live`. */
function changed(
  manifest: Record<string, unknown>,
  file: string,
  live: Record<string, unknown>,
  paths: string[],
): ChangedObject {
  const metadata = manifest['metadata'] as { name: string; namespace: string };
  const kind = String(manifest['kind']);
  const object: RenderedObject = {
    manifest,
    group: '',
    version: 'v1',
    kind,
    name: metadata.name,
    namespace: metadata.namespace,
    subject: `${kind}/${metadata.namespace}/${metadata.name}`,
    source: { file, line: 1 },
  };
  return { object, live: live as unknown as KubeObject, paths };
}

describe('objects of a SOPS-encrypted file written back encrypted again', () => {
  let key: AgeKey;
  let deps: SecretDeps;
  before(async () => {
    key = await generateAgeKey();
    deps = {
      readSecret: async () => key.identity,
      env: { ...process.env, ...rendererEnvironment(await rendererBinaries()) },
    };
  });

  /** `yaml` as a user commits it, only the keys matching `regex` encrypted. */
  const encrypted = (path: string, yaml: string, regex: string) =>
    sopsEncrypt(yaml, { format: 'yaml', age: [key.recipient], encryptedRegex: regex }).then(
      (content) => ({ path, format: 'yaml' as const, content }),
    );

  it('hides a ConfigMap’s new encrypted value from then on, not its clear-text label', async () => {
    // Prepare: `data` encrypted, metadata in clear; the cluster changed a value and a label.
    const manifest = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'sealed', namespace: 'apps', labels: { tier: 'web' } },
      data: { color: 'blue' },
    };
    const source = await encrypted(
      'sealed.yaml',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sealed\n  namespace: apps\n  labels:\n    tier: web\ndata:\n  color: blue\n',
      '^data$',
    );
    const live = {
      ...manifest,
      metadata: { ...manifest.metadata, labels: { tier: LABEL } },
      data: { color: CONFIG_MARKER },
    };

    // Act
    const made = await reencryptedObjects(
      track,
      [changed(manifest, 'sealed.yaml', live, ['/data/color', '/metadata/labels/tier'])],
      [source],
      deps,
    );

    // Assess: written (the label in clear is no secret), the value only encrypted, and hidden.
    assert.deepEqual(made.refused, []);
    assert.equal(made.changes.length, 1);
    const content = made.changes[0]!.replace!.content;
    assert.ok(!content.includes(CONFIG_MARKER), 'the value is encrypted in the file');
    assert.ok(content.includes(LABEL), 'the label stays in clear text, as the rule says');
    assert.ok(holdsSecretValue(CONFIG_MARKER), 'the ConfigMap value is a secret value now');
    assert.equal(
      redactSecrets(`drift of ConfigMap/apps/sealed: color is ${CONFIG_MARKER}`),
      'drift of ConfigMap/apps/sealed: color is ***',
    );
    assert.ok(!holdsSecretValue(LABEL), 'a value in clear text is not hidden');
  });

  it('refuses a Secret’s data key the file’s rule leaves in clear text', async () => {
    // Prepare: only stringData is encrypted; the cluster changed a `data` key.
    const base64 = (text: string) => Buffer.from(text).toString('base64');
    const manifest = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'apps' },
      stringData: { user: 'app' },
      data: { password: base64('from-git') },
    };
    const source = await encrypted(
      'db.yaml',
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: apps\nstringData:\n  user: app\ndata:\n  password: ${base64('from-git')}\n`,
      '^stringData$',
    );
    const live = { ...manifest, data: { user: base64('app'), password: base64(DATA_MARKER) } };

    // Act
    const made = await reencryptedObjects(
      track,
      [changed(manifest, 'db.yaml', live, ['/data/password'])],
      [source],
      deps,
    );

    // Assess: nothing to write, the refusal names the file and never the value.
    assert.deepEqual(made.changes, []);
    assert.deepEqual(made.refused, [
      {
        subject: 'Secret/apps/db',
        reason:
          "db.yaml: encrypted again, it would still hold a secret value in plain text (the file's sops rule does not encrypt every changed key)",
      },
    ]);
    assert.ok(holdsSecretValue(DATA_MARKER));
    assert.ok(holdsSecretValue(base64(DATA_MARKER)));
  });
});

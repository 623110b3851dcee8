/**
 * SOPS decryption and post-build substitution against the real tools and the
 * test cluster: files encrypted here by the real sops for age keys made by
 * the real age-keygen (and for a KMS key of moto's local KMS), rendered by
 * the real kustomize, decrypted in the apply step only. The artifact, state
 * and history keep ciphertexts and `${VAR}`s, never a plaintext; drift
 * compares the decrypted Secret; rollback decrypts again; bad keys, tampered
 * files and bad variables are refused with the file or variable named and
 * the cluster left as it was.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { SecretUnavailableError } from '../../src/config/read-secret.ts';
import { parseBundle } from '../../src/render/index.ts';
import { sopsDecrypt } from '../../src/render/sops.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { rollbackTrack } from '../../src/sync/rollback.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { driftAndWriteBack } from '../harness/write-back.ts';
import { pushFiles, runGit } from '../harness/git-server.ts';
import { startKms, type KmsServer } from '../harness/kms.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { generateAgeKey, sopsEncrypt, type AgeKey } from '../harness/sops.ts';

const SECRET_REGEX = '^(data|stringData)$';

/** A marker no other test uses, so finding it anywhere means it leaked. */
const marker = (what: string): string =>
  `planted-${what}-${Math.random().toString(36).slice(2, 10)}`;

function secretYaml(name: string, values: Record<string, string>, labels = 'app: web'): string {
  return [
    'apiVersion: v1',
    'kind: Secret',
    'metadata:',
    `  name: ${name}`,
    '  labels:',
    `    ${labels}`,
    'type: Opaque',
    'stringData:',
    ...Object.entries(values).map(([key, value]) => `  ${key}: ${value}`),
    '',
  ].join('\n');
}

/** Every file of a directory tree, as text. */
async function filesUnder(dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(path, await readFile(path, 'utf8'));
  }
  return found;
}

/** Fails naming the file when `value` (or its base64 form) is anywhere under `dir`. */
async function assertNowhereIn(dir: string, values: readonly string[]): Promise<void> {
  const files = await filesUnder(dir);
  assert.ok(files.size > 0, `${dir} holds files`);
  for (const value of values) {
    for (const form of [value, Buffer.from(value).toString('base64')]) {
      for (const [path, text] of files) {
        assert.ok(!text.includes(form), `${path} holds a secret value`);
      }
    }
  }
}

describe('SOPS and variables, synced to the cluster', () => {
  const fixture = new TrackFixture('secrets');
  let key: AgeKey;
  let otherKey: AgeKey;
  let kms: KmsServer;
  /** Values of the `env:` secrets the tracks name. */
  const secrets = new Map<string, string>();
  let deps: SyncDeps;

  before(async () => {
    const tools = await rendererBinaries();
    Object.assign(process.env, rendererEnvironment(tools));
    [key, otherKey] = await Promise.all([generateAgeKey(), generateAgeKey()]);
    kms = await startKms();
    await fixture.start();
    secrets.set('AGE_KEY', key.identity);
    const readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && secrets.has(ref.name)) return secrets.get(ref.name)!;
      throw new SecretUnavailableError(`secret ${JSON.stringify(ref)}: not set`);
    };
    deps = { ...fixture.deps, readSecret, env: { ...process.env, ...kms.env } };
  });

  after(async () => {
    await fixture.stop();
    await kms.stop();
  });

  const readSecretValue = async (ns: string, name: string, field: string) => {
    const secret = await fixture.core.readNamespacedSecret({ name, namespace: ns });
    const data = secret.data?.[field];
    return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
  };

  async function newTrack(
    name: string,
    extra: string,
  ): Promise<Awaited<ReturnType<TrackFixture['newTrack']>>> {
    return fixture.newTrack(name, `decryption: {provider: sops, keys: ["env:AGE_KEY"]}\n${extra}`);
  }

  it('decrypts a YAML manifest, a JSON manifest and generator inputs through kustomize, in the apply step only', async () => {
    // Prepare: a base with encrypted manifests and generator inputs, an overlay that renames everything.
    const password = marker('password');
    const apiKey = marker('api-key');
    const token = marker('token');
    const rawKey = marker('raw-key');
    const keystore = Buffer.concat([Buffer.from([0, 1, 2, 255]), Buffer.from(marker('binary'))]);
    const age = [key.recipient];
    const files = {
      'base/kustomization.yaml': [
        'resources: [db.yaml, api.json, raw.yaml]',
        'secretGenerator:',
        '  - name: env',
        '    envs: [app.env]',
        '  - name: files',
        '    files: [keystore.p12]',
      ].join('\n'),
      'base/db.yaml': await sopsEncrypt(secretYaml('db', { password, port: '"5432"' }), {
        format: 'yaml',
        age,
        encryptedRegex: SECRET_REGEX,
      }),
      // `data:` as `kubectl create secret --dry-run=client -o yaml` writes it, encrypted whole.
      'base/raw.yaml': await sopsEncrypt(
        `apiVersion: v1\nkind: Secret\nmetadata: {name: raw}\ndata:\n  key: ${Buffer.from(rawKey).toString('base64')}\n`,
        { format: 'yaml', age, encryptedRegex: SECRET_REGEX },
      ),
      'base/api.json': await sopsEncrypt(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'api' },
          stringData: { token },
        }),
        { format: 'json', age, encryptedRegex: SECRET_REGEX },
      ),
      'base/app.env': await sopsEncrypt(`API_KEY=${apiKey}\nMODE=prod\n`, {
        format: 'dotenv',
        age,
      }),
      'base/keystore.p12': await sopsEncrypt(keystore, { format: 'binary', age }),
      'overlays/prod/kustomization.yaml':
        'resources: [../../base]\nnamePrefix: prod-\nlabels:\n  - pairs: {env: prod}\n',
    };
    const { track, repo, ns } = await newTrack('kustomize', 'subPath: overlays/prod');
    const sha = await pushFiles(repo, files);

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess: the cluster has the plaintext, under kustomize's names.
    assert.equal(result.result, 'applied', result.error);
    assert.equal(await readSecretValue(ns, 'prod-db', 'password'), password);
    assert.equal(await readSecretValue(ns, 'prod-db', 'port'), '5432');
    assert.equal(await readSecretValue(ns, 'prod-api', 'token'), token);
    assert.equal(await readSecretValue(ns, 'prod-raw', 'key'), rawKey);
    const secretsInNs = await fixture.core.listNamespacedSecret({ namespace: ns });
    const envSecret = secretsInNs.items.find((s) => s.metadata?.name?.startsWith('prod-env-'));
    assert.ok(envSecret, 'the generated Secret exists with its hash suffix');
    assert.deepEqual(
      Object.keys(envSecret.data ?? {}).sort(),
      ['API_KEY', 'MODE'],
      'no sops_ metadata keys',
    );
    assert.equal(Buffer.from(envSecret.data!.API_KEY!, 'base64').toString(), apiKey);
    const filesSecret = secretsInNs.items.find((s) => s.metadata?.name?.startsWith('prod-files-'));
    assert.deepEqual(Buffer.from(filesSecret?.data?.['keystore.p12'] ?? '', 'base64'), keystore);
    const live = await fixture.core.readNamespacedSecret({ name: 'prod-db', namespace: ns });
    assert.equal(live.metadata?.labels?.env, 'prod', 'kustomize labelled the encrypted object');

    // The artifact holds the files still encrypted; nothing stored holds a plaintext.
    const stored = parseBundle(await deps.artifacts.get(track.name, sha));
    assert.deepEqual(
      stored.encryptedSources?.map((s) => s.path),
      ['base/api.json', 'base/app.env', 'base/db.yaml', 'base/keystore.p12', 'base/raw.yaml'],
    );
    await assertNowhereIn(fixture.storeDir, [
      password,
      apiKey,
      token,
      rawKey,
      Buffer.from(rawKey).toString('base64'),
      keystore.toString('utf8').slice(4),
    ]);
  });

  it('compares the decrypted Secret for drift: none when in sync, a hand edit found and put back, masked', async () => {
    // Prepare
    const value = marker('drift');
    const { track, repo, ns } = await newTrack('drift', '');
    await pushFiles(repo, {
      'db.yaml': await sopsEncrypt(secretYaml('db', { password: value }), {
        format: 'yaml',
        age: [key.recipient],
        encryptedRegex: SECRET_REGEX,
      }),
    });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');

    // Act + Assess: in sync.
    const clean = await reconcileDrift(track, { type: 'drift', track: track.name }, deps);
    assert.deepEqual(clean.drifted, [], 'an encrypted Secret in sync shows no drift');
    assert.deepEqual(clean.errors, []);

    // A hand edit is drift, corrected, and the report holds neither value.
    const edited = marker('edited');
    // As `kubectl edit` does: read, change, update under its field manager.
    const live = await fixture.core.readNamespacedSecret({ name: 'db', namespace: ns });
    live.data = { ...live.data, password: Buffer.from(edited).toString('base64') };
    await fixture.core.replaceNamespacedSecret({
      name: 'db',
      namespace: ns,
      body: live,
      fieldManager: 'kubectl-edit',
    });
    const found = await reconcileDrift(track, { type: 'drift', track: track.name }, deps);
    assert.deepEqual(
      found.drifted.map((d) => d.subject),
      [`Secret/${ns}/db`],
    );
    assert.equal(found.corrected, true);
    assert.equal(await readSecretValue(ns, 'db', 'password'), value);
    const report = JSON.stringify(found);
    for (const leaked of [value, edited]) {
      assert.ok(
        !report.includes(leaked) && !report.includes(Buffer.from(leaked).toString('base64')),
      );
    }
    await assertNowhereIn(fixture.storeDir, [value, edited]);
  });

  it('rolls back to an older revision by decrypting it again', async () => {
    // Prepare: two revisions with different values.
    const first = marker('first');
    const second = marker('second');
    const { track, repo, ns } = await newTrack('rollback', '');
    const encrypt = (value: string) =>
      sopsEncrypt(secretYaml('db', { password: value }), {
        format: 'yaml',
        age: [key.recipient],
        encryptedRegex: SECRET_REGEX,
      });
    const firstSha = await pushFiles(repo, { 'db.yaml': await encrypt(first) });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');
    await pushFiles(repo, { 'db.yaml': await encrypt(second) });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');
    assert.equal(await readSecretValue(ns, 'db', 'password'), second);

    // Act
    const result = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision: firstSha },
      deps,
    );

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(await readSecretValue(ns, 'db', 'password'), first);
    await assertNowhereIn(fixture.storeDir, [first, second]);
  });

  it('decrypts a file encrypted for an AWS KMS key the track lists (moto as KMS)', async () => {
    // Prepare
    const arn = await kms.createKey();
    const value = marker('kms');
    const { track, repo, ns } = await fixture.newTrack(
      'kms',
      `decryption: {provider: sops, kmsKeys: ["${arn}"]}`,
    );
    await pushFiles(repo, {
      'db.yaml': await sopsEncrypt(secretYaml('db', { password: value }), {
        format: 'yaml',
        kms: [arn],
        env: kms.env,
        encryptedRegex: SECRET_REGEX,
      }),
    });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(await readSecretValue(ns, 'db', 'password'), value);
  });

  it('substitutes substitute: and substituteFrom variables, keeping secret ones out of the artifact', async () => {
    // Prepare
    const dbPassword = marker('db-password');
    secrets.set(
      'WEB_VARS',
      `# variables of web\nDB_PASSWORD=${dbPassword}\nREPLICAS=1\nCLUSTER=from-secret\n`,
    );
    const { track, repo, ns } = await fixture.newTrack(
      'vars',
      'substitute: {CLUSTER: prod}\nsubstituteFrom: [{secret: "env:WEB_VARS"}, {secret: "env:ABSENT_VARS", optional: true}]',
    );
    const sha = await pushFiles(repo, {
      'app.yaml': [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: settings-${CLUSTER}',
        'data:',
        '  cluster: ${CLUSTER}',
        '  region: ${REGION:=eu-west-1}',
        '  literal: $${CLUSTER}',
        '---',
        'apiVersion: v1',
        'kind: Secret',
        'metadata: {name: db}',
        'stringData: {password: "${DB_PASSWORD}"}',
        '---',
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: script',
        '  annotations: {driftless.dev/substitute: disabled}',
        'data: {run: "echo ${HOME}"}',
      ].join('\n'),
    });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess: substitute: wins over substituteFrom, as in Flux.
    assert.equal(result.result, 'applied', result.error);
    const settings = await fixture.core.readNamespacedConfigMap({
      name: 'settings-prod',
      namespace: ns,
    });
    assert.deepEqual(
      { ...settings.data },
      { cluster: 'prod', region: 'eu-west-1', literal: '${CLUSTER}' },
    );
    assert.equal(await readSecretValue(ns, 'db', 'password'), dbPassword);
    const script = await fixture.core.readNamespacedConfigMap({ name: 'script', namespace: ns });
    assert.equal(script.data?.run, 'echo ${HOME}');
    const stored = new TextDecoder().decode(await deps.artifacts.get(track.name, sha));
    assert.ok(stored.includes('${DB_PASSWORD}'), 'the artifact keeps the variable');
    await assertNowhereIn(fixture.storeDir, [dbPassword]);
  });

  it('refuses wrong keys, tampered files and bad variables naming the file or variable, applying nothing', async () => {
    // Prepare: a good revision applied first.
    const good = marker('good');
    const encryptFor = (recipient: string, value: string) =>
      sopsEncrypt(secretYaml('db', { password: value }), {
        format: 'yaml',
        age: [recipient],
        encryptedRegex: SECRET_REGEX,
      });
    const { track, repo, ns } = await newTrack('bad', 'substitute: {ENV: prod}');
    const goodFile = await encryptFor(key.recipient, good);
    await pushFiles(repo, { 'db.yaml': goodFile });
    const applied = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(applied.result, 'applied', applied.error);

    const ciphertextOf = (text: string) => /password: (ENC\[[^\]]+\])/.exec(text)![1]!;
    const flipped = (ciphertext: string) =>
      ciphertext.replace(/data:(.)/, (_, c: string) => `data:${c === 'A' ? 'B' : 'A'}`);
    const cases: { name: string; files: Record<string, string | null>; error: RegExp }[] = [
      {
        name: 'a file encrypted for another key',
        files: { 'db.yaml': await encryptFor(otherKey.recipient, marker('other')) },
        error: /db\.yaml: none of the track's keys can decrypt it/,
      },
      {
        name: 'metadata changed after encryption (MAC)',
        files: { 'db.yaml': goodFile.replace('app: web', 'app: tampered') },
        error: /db\.yaml: the file's MAC does not match its content/,
      },
      {
        name: 'a value changed after encryption',
        files: {
          'db.yaml': goodFile.replace(ciphertextOf(goodFile), flipped(ciphertextOf(goodFile))),
        },
        error: /db\.yaml: /,
      },
      {
        name: 'a missing variable',
        files: {
          'settings.yaml':
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: "${MISSING_VAR}"}\n',
        },
        error:
          /ConfigMap\/[^ ]*settings \(settings\.yaml\): variable \$\{MISSING_VAR\} is not set and has no default/,
      },
      {
        name: 'a malformed ${',
        files: {
          'settings.yaml':
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: "x ${ENV"}\n',
        },
        error: /settings \(settings\.yaml\): "\$\{ENV" has \$\{ without a closing \}/,
      },
    ];

    for (const bad of cases) {
      // Act
      const sha = await pushFiles(repo, {
        'db.yaml': goodFile,
        'settings.yaml': null,
        ...bad.files,
      });
      const result = await syncTrack(track, { trigger: 'manual' }, deps);

      // Assess
      assert.equal(result.result, 'failed', bad.name);
      assert.equal(result.revision, sha, bad.name);
      assert.match(result.error ?? '', bad.error, bad.name);
      assert.equal(await readSecretValue(ns, 'db', 'password'), good, bad.name);
      assert.equal(
        (await fixture.core.listNamespacedConfigMap({ namespace: ns })).items.some(
          (cm) => cm.metadata?.name === 'settings',
        ),
        false,
        `${bad.name}: nothing of the revision applied`,
      );
      const state = await readTrackState(deps.state, track.name);
      assert.equal(
        state.appliedRevision,
        applied.revision,
        `${bad.name}: the last good revision stays`,
      );
    }
    await assertNowhereIn(fixture.storeDir, [good]);
  });

  it('refuses an encrypted file on a track without decryption: at fetch, naming the file', async () => {
    const { track, repo } = await fixture.newTrack('nodecrypt', '');
    await pushFiles(repo, {
      'db.yaml': await sopsEncrypt(secretYaml('db', { password: marker('x') }), {
        format: 'yaml',
        age: [key.recipient],
        encryptedRegex: SECRET_REGEX,
      }),
    });
    const result = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(result.result, 'failed');
    assert.match(
      result.error ?? '',
      /db\.yaml: is encrypted with SOPS, but track "nodecrypt" has no decryption:/,
    );
  });

  it('writes a Secret changed in the cluster back to Git encrypted again, never in plain text (syncTo: git)', async () => {
    // Prepare: a SOPS-encrypted Secret under a syncTo: git rule, synced.
    const { track, repo, ns } = await newTrack(
      'sealed',
      'rules: [{apiGroups: [""], resources: [secrets], syncTo: git}]',
    );
    await pushFiles(repo, {
      'db.yaml': await sopsEncrypt(secretYaml('db', { password: 'from-git' }), {
        format: 'yaml',
        age: [key.recipient],
        encryptedRegex: SECRET_REGEX,
      }),
    });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');
    const changed = marker('rotated-in-cluster');
    await fixture.core.patchNamespacedSecret({
      name: 'db',
      namespace: ns,
      body: [
        { op: 'replace', path: '/data/password', value: Buffer.from(changed).toString('base64') },
      ],
    });

    // Act: the drift check (apply side) and the write-back (fetch side).
    const { drift, written } = await driftAndWriteBack(track, deps);

    // Assess: only ciphertext left the apply step and reached Git; it decrypts to the new value.
    assert.deepEqual(drift.writeBackRefused, []);
    for (const form of [changed, Buffer.from(changed).toString('base64')]) {
      assert.ok(
        !JSON.stringify(drift.writeBack).includes(form),
        'the write-back job holds the value',
      );
    }
    assert.equal(written.result, 'written-back', written.error);
    const file = await runGit(['--git-dir', repo.bareDir, 'show', 'main:db.yaml']);
    assert.ok(!file.includes(changed), 'Git holds the value in plain text');
    assert.match(file, /password: ENC\[AES256_GCM/);
    assert.match(file, new RegExp(key.recipient));
    const plaintext = await sopsDecrypt(
      { path: 'db.yaml', format: 'yaml', content: file },
      {
        binary: (await rendererBinaries()).sops,
        ageKeys: [key.identity],
        kmsKeys: [],
        timeoutMs: 30_000,
      },
    );
    assert.match(plaintext.toString('utf8'), new RegExp(`password: ${changed}`));
    // The commit synced back: the Secret keeps the value, nothing changes.
    const again = await syncTrack(track, { trigger: 'webhook' }, deps);
    assert.equal(again.revision, written.commit);
    assert.equal(await readSecretValue(ns, 'db', 'password'), changed);
    assert.deepEqual(
      again.changeset
        .filter((e) => e.action !== 'unchanged' && e.action !== 'skipped')
        .map((e) => e.subject),
      [],
    );
  });
});

/**
 * The SOPS logic around the real sops: which encrypted files a bundle keeps
 * (fetch side), and how plaintexts go back where their ciphertexts were
 * (apply side). The decrypt port here is a small fake of our own port that
 * answers with a known plaintext; the real sops is exercised by
 * test/integration/secrets.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decryptBundle } from '../../src/render/decrypt-bundle.ts';
import { parseBundle, parseRevision, serializeBundle } from '../../src/render/index.ts';
import { encryptedSourcesOf, sopsFormatOf } from '../../src/render/sops-sources.ts';
import type { EncryptedSource, RevisionFile } from '../../src/render/types.ts';

const file = (path: string, text: string): RevisionFile => ({
  path,
  content: new TextEncoder().encode(text),
});
const enc = (n: number, type = 'str') =>
  `ENC[AES256_GCM,data:ZGF0YQ${n}=,iv:aXY${n}=,tag:dGFn${n}=,type:${type}]`;
const SOPS_META =
  'sops:\n  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]\n  version: 3.13.3\n';

const encryptedSecret = [
  'apiVersion: v1',
  'kind: Secret',
  'metadata: {name: db, namespace: apps}',
  'stringData:',
  `  password: ${enc(1)}`,
  `  port: ${enc(2, 'int')}`,
  SOPS_META,
].join('\n');
const plainSecret = [
  'apiVersion: v1',
  'kind: Secret',
  'metadata: {name: db, namespace: apps}',
  'stringData:',
  '  password: hunter2',
  '  port: 5432',
  '',
].join('\n');

describe('sopsFormatOf', () => {
  it('tells the formats apart by extension and content', () => {
    assert.equal(sopsFormatOf('a/secret.yaml', encryptedSecret), 'yaml');
    assert.equal(sopsFormatOf('a/app.env', `A=${enc(1)}\nsops_mac=${enc(2)}\n`), 'dotenv');
    assert.equal(sopsFormatOf('a/other', `A=${enc(1)}\nsops_mac=${enc(2)}\n`), 'dotenv');
    assert.equal(
      sopsFormatOf('a/s.json', JSON.stringify({ a: enc(1), sops: { mac: 'x' } })),
      'json',
    );
    assert.equal(
      sopsFormatOf('a/key.p12', JSON.stringify({ data: enc(1), sops: { mac: 'x' } })),
      'binary',
    );
    assert.equal(sopsFormatOf('a/plain.yaml', 'a: b\n'), undefined);
    assert.equal(sopsFormatOf('a/readme.md', `mentions ${enc(1)}`), undefined);
  });
});

describe('encryptedSourcesOf', () => {
  const bundleOf = (files: RevisionFile[]) => parseRevision(files).objects;

  it('keeps the encrypted files the objects take values from, still encrypted', () => {
    const files = [
      file('secret.yaml', encryptedSecret),
      file('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\n'),
    ];
    const sources = encryptedSourcesOf(files, bundleOf(files), {
      decryption: true,
      trackName: 'web',
    });
    assert.deepEqual(sources, [{ path: 'secret.yaml', format: 'yaml', content: encryptedSecret }]);
  });

  it('refuses SOPS values on a track without decryption:, naming the file', () => {
    const files = [file('secret.yaml', encryptedSecret)];
    assert.throws(
      () => encryptedSourcesOf(files, bundleOf(files), { decryption: false, trackName: 'web' }),
      /^RenderRefusedError: secret\.yaml: is encrypted with SOPS, but track "web" has no decryption:/,
    );
  });

  it('refuses a ciphertext no file holds, and one inside a longer string', () => {
    const copied = file(
      'cm.yaml',
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\ndata: {a: "${enc(9)}"}\n`,
    );
    assert.throws(
      () =>
        encryptedSourcesOf([copied], bundleOf([copied]), { decryption: true, trackName: 'web' }),
      /ConfigMap\/apps\/c data\.a: holds a SOPS-encrypted value that no encrypted file of the revision holds/,
    );
    const inside = file(
      'cm.yaml',
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\ndata: {a: "x ${enc(9)}"}\n`,
    );
    assert.throws(
      () =>
        encryptedSourcesOf([inside], bundleOf([inside]), { decryption: true, trackName: 'web' }),
      /inside a longer string/,
    );
  });
});

describe('decryptBundle', () => {
  const files = [file('secret.yaml', encryptedSecret)];
  const bundle = parseBundle(
    serializeBundle({
      ...parseRevision(files),
      encryptedSources: [{ path: 'secret.yaml', format: 'yaml', content: encryptedSecret }],
    }),
  );

  it('puts each plaintext where its ciphertext was, typed as SOPS typed it, and drops the sops metadata', async () => {
    const asked: EncryptedSource[] = [];
    const { bundle: plain, secretValues } = await decryptBundle(bundle, async (source) => {
      asked.push(source);
      return Buffer.from(plainSecret);
    });
    assert.deepEqual(
      asked.map((s) => s.path),
      ['secret.yaml'],
    );
    const [secret] = plain.objects;
    assert.deepEqual(secret!.manifest.stringData, { password: 'hunter2', port: 5432 });
    assert.equal('sops' in secret!.manifest, false);
    assert.equal(plain.encryptedSources, undefined);
    assert.deepEqual([...secretValues].sort(), ['5432', 'hunter2']);
    // The stored bundle is untouched.
    assert.ok(JSON.stringify(bundle).includes(enc(1)));
  });

  it('fails naming the object and field when a ciphertext does not decrypt to anything', async () => {
    await assert.rejects(
      decryptBundle(bundle, async () =>
        Buffer.from(plainSecret.replace('password: hunter2\n', '')),
      ),
      /Secret\/apps\/db stringData\.password: holds a SOPS-encrypted value that none of the revision's encrypted files decrypts to/,
    );
  });

  it('passes the port’s error on (a wrong key, a MAC mismatch)', async () => {
    await assert.rejects(
      decryptBundle(bundle, async () => {
        throw new Error('secret.yaml: MAC mismatch');
      }),
      /secret\.yaml: MAC mismatch/,
    );
  });

  it('asks for nothing when the bundle has no encrypted sources', async () => {
    const plainBundle = parseRevision([
      file('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n'),
    ]);
    const result = await decryptBundle(plainBundle, () => assert.fail('no decryption expected'));
    assert.equal(result.bundle, plainBundle);
  });
});

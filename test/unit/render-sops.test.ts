/**
 * The SOPS logic around the real sops: which encrypted files a bundle keeps
 * (fetch side), and how plaintexts go back where their ciphertexts were
 * (apply side). The decrypt port here is a small fake of our own port that
 * answers with a known plaintext; the real sops is exercised by
 * test/integration/secrets.test.ts, and here for what sopsDecrypt makes of
 * its messages.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decryptBundle } from '../../src/render/decrypt-bundle.ts';
import { parseConfig } from '../../src/config/index.ts';
import {
  parseBundle,
  parseRevision,
  renderRevision,
  serializeBundle,
} from '../../src/render/index.ts';
import { encryptedSourcesOf, sopsFormatOf } from '../../src/render/sops-sources.ts';
import { sopsDecrypt } from '../../src/render/sops.ts';
import { rendererBinaries } from '../harness/renderers.ts';
import { generateAgeKey, sopsEncrypt } from '../harness/sops.ts';
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

describe('renderRevision of SOPS files', () => {
  const track = (extra: string) =>
    parseConfig(
      `tracks:\n  - name: web\n    repository: https://git.example.com/org/repo.git\n    decryption: {provider: sops, keys: [env:AGE]}\n${extra}`,
      'driftless.yaml',
    ).tracks[0]!;

  it('refuses a file encrypted whole, naming it and the sops flag that keeps apiVersion, kind and metadata readable', async () => {
    // What `sops encrypt` without --encrypted-regex writes: every value is a ciphertext.
    const whole = [
      `apiVersion: ${enc(1)}`,
      `kind: ${enc(2)}`,
      'metadata:',
      `  name: ${enc(3)}`,
      `  namespace: ${enc(4)}`,
      'stringData:',
      `  password: ${enc(5)}`,
      SOPS_META,
    ].join('\n');
    const files = [
      file('s6/kustomization.yaml', 'resources: [full.yaml]\n'),
      file('s6/full.yaml', whole),
    ];
    await assert.rejects(
      renderRevision(track('    subPath: s6\n    kustomize: false\n'), files),
      (error: Error) => {
        assert.match(
          error.message,
          /^s6\/full\.yaml:1: apiVersion, kind and metadata are encrypted by SOPS; Driftless needs apiVersion, kind and metadata readable .*sops encrypt --encrypted-regex '\^\(data\|stringData\)\$'/,
        );
        assert.doesNotMatch(error.message, /CRD|ENC\[/);
        return true;
      },
    );
  });

  it('refuses the same in JSON, a ciphertext with slashes, and names only what is encrypted', async () => {
    const slashed = 'ENC[AES256_GCM,data:a/b/c=,iv:aX/Y=,tag:dA/g=,type:str]';
    const json = JSON.stringify(
      { apiVersion: slashed, kind: enc(2), metadata: { name: enc(3) }, sops: { mac: enc(4) } },
      null,
      '\t',
    );
    await assert.rejects(
      renderRevision(track('    subPath: app\n'), [file('app/full.json', json)]),
      /^InvalidManifestError: app\/full\.json:2: apiVersion, kind and metadata are encrypted by SOPS/,
    );
    const kindOnly = `apiVersion: v1\nkind: ${enc(2)}\nmetadata: {name: db}\ndata: {a: ${enc(3)}}\n${SOPS_META}`;
    await assert.rejects(
      renderRevision(track('    subPath: app\n'), [file('app/kind.yaml', kindOnly)]),
      /^InvalidManifestError: app\/kind\.yaml:2: kind is encrypted by SOPS;/,
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

  it("decrypts a Secret's data value SOPS encrypted itself (--encrypted-regex '^(data|stringData)$')", async () => {
    // Prepare: as `kubectl create secret --dry-run -o yaml | sops encrypt` writes it
    const encryptedData = [
      'apiVersion: v1',
      'kind: Secret',
      'metadata: {name: api, namespace: apps}',
      'data:',
      `  apikey: ${enc(3)}`,
      SOPS_META,
    ].join('\n');
    const plainData =
      'apiVersion: v1\nkind: Secret\nmetadata: {name: api, namespace: apps}\ndata:\n  apikey: aHVudGVyMi1rZXk=\n';
    const files = [file('api.yaml', encryptedData)];
    const rendered = parseRevision(files);

    // Act
    const sources = encryptedSourcesOf(files, rendered.objects, {
      decryption: true,
      trackName: 'web',
    });
    const { bundle: plain, secretValues } = await decryptBundle(
      parseBundle(serializeBundle({ ...rendered, encryptedSources: sources })),
      async () => Buffer.from(plainData),
    );

    // Assess: the base64 Git held, and both forms of the value hidden
    assert.deepEqual(
      sources.map((source) => source.path),
      ['api.yaml'],
    );
    assert.deepEqual(plain.objects[0]!.manifest.data, { apikey: 'aHVudGVyMi1rZXk=' });
    assert.deepEqual([...secretValues].sort(), ['aHVudGVyMi1rZXk=', 'hunter2-key']);
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

describe('sopsDecrypt messages (the real sops)', () => {
  it('says which decryption.keys entry is not an age identity, never echoing it', async () => {
    // Prepare
    const [key, other, { sops }] = await Promise.all([
      generateAgeKey(),
      generateAgeKey(),
      rendererBinaries(),
    ]);
    const content = await sopsEncrypt(plainSecret, {
      format: 'yaml',
      age: [key.recipient],
      encryptedRegex: '^(data|stringData)$',
    });
    // The last character of a bech32 key is its checksum's: changing it breaks only the checksum.
    const badChecksum = `${key.identity.slice(0, -1)}${key.identity.endsWith('Q') ? 'P' : 'Q'}`;
    const failure = async (ageKeys: string[]): Promise<string> => {
      try {
        await sopsDecrypt(
          { path: 'db.yaml', format: 'yaml', content },
          { binary: sops, ageKeys, kmsKeys: [], timeoutMs: 30_000 },
        );
      } catch (error) {
        return String(error);
      }
      return assert.fail('expected sops to fail');
    };
    const cases: [string[], RegExp][] = [
      [
        ['not-an-age-key'],
        /^DecryptionError: db\.yaml: decryption\.keys\[0\] cannot be read as an age identity \(sops: unknown identity type\)/,
      ],
      [
        [other.identity, badChecksum],
        // A checksum typo looks like a key: the message cannot say which entry it is.
        /^DecryptionError: db\.yaml: an entry of decryption\.keys cannot be read as an age identity \(sops: malformed secret key: invalid checksum\)/,
      ],
      [[other.identity], /^DecryptionError: db\.yaml: none of the track's keys can decrypt it/],
    ];

    for (const [ageKeys, expected] of cases) {
      // Act
      const message = await failure(ageKeys);

      // Assess
      assert.match(message, expected);
      for (const value of [...ageKeys, badChecksum.slice(16)]) {
        assert.ok(!message.includes(value), `the message holds a key: ${message}`);
      }
    }
  });
});

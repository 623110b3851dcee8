/**
 * A drift check's write-back changes leave the apply step with known secret values redacted —
 * except the ciphertext of a SOPS file encrypted again, whose random base64 can hold a short
 * secret's letters by chance: redacting them corrupted the file written to Git (CI once saw
 * `invalid armor: illegal base64 data` when the written file was decrypted).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { addSecretValues, forgetSecretValuesForTests, holdsSecretValue } from '../../src/redact.ts';
import { redactWriteBack } from '../../src/sync/reconcile-drift.ts';
import { dbSecretChange as change } from './fakes/write-back-branch.ts';

describe('write-back changes leaving the apply step', () => {
  afterEach(() => forgetSecretValuesForTests());

  it('keep a re-encrypted file whole, even where its ciphertext spells a secret value', () => {
    // Prepare: "prod" is a known secret; the ciphertext happens to hold those letters.
    addSecretValues(['prod']);
    const content =
      'data:\n  password: ENC[AES256_GCM,data:xKprodQ9,iv:abc,tag:def,type:str]\nsops:\n  age:\n    - enc: |\n        -----BEGIN AGE ENCRYPTED FILE-----\n        YWdlprodLWVu\n';
    const reencrypted = change({ replace: { content, base: 'data: {password: ENC[prodx]}\n' } });

    // Act
    const sent = redactWriteBack(reencrypted);

    // Assess
    assert.deepEqual(sent.replace, reencrypted.replace);
  });

  it('redact every other field, a re-encrypted change’s included', () => {
    // Prepare
    addSecretValues(['s3cr3t-value']);
    const fields = [{ path: '/data/note', value: 'is s3cr3t-value', base: 'was s3cr3t-value' }];

    // Act
    const plain = redactWriteBack(change({ fields }));
    const reencrypted = redactWriteBack(
      change({ fields, name: 's3cr3t-value', replace: { content: 'x', base: 'y' } }),
    );

    // Assess
    assert.deepEqual(plain.fields, [{ path: '/data/note', value: 'is ***', base: 'was ***' }]);
    assert.deepEqual(reencrypted.fields, plain.fields);
    assert.equal(reencrypted.name, '***');
  });

  it('tell whether a text holds a known secret value', () => {
    // Prepare
    addSecretValues(['hunter22']);

    // Act, Assess: the value and its base64 form; the same answer when asked twice.
    assert.equal(holdsSecretValue('password: hunter22'), true);
    assert.equal(holdsSecretValue(`password: ${Buffer.from('hunter22').toString('base64')}`), true);
    assert.equal(holdsSecretValue('password: hunter22'), true);
    assert.equal(holdsSecretValue('password: hunter2'), false);
  });
});

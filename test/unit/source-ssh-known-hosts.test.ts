/**
 * knownHosts lines as OpenSSH reads them: which keys a host (and port) is
 * trusted with, hashed names, negated patterns, wildcards and @revoked.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { knownHostKeys } from '../../src/source/git/ssh-transport.ts';

const KEY_A = Buffer.from('key-a').toString('base64');
const KEY_B = Buffer.from('key-b').toString('base64');
const KEY_C = Buffer.from('key-c').toString('base64');

function at(host: string, port = 22) {
  return { user: 'git', host, port, path: 'org/repo.git' };
}

function names(keys: Buffer[]): string[] {
  return keys.map((key) => key.toString('utf8'));
}

/** `|1|salt|hmac` as `ssh-keygen -H` writes it. */
function hashed(name: string): string {
  const salt = Buffer.from('0123456789abcdefghij');
  const hash = createHmac('sha1', salt).update(name).digest('base64');
  return `|1|${salt.toString('base64')}|${hash}`;
}

describe('knownHostKeys', () => {
  it('trusts the keys listed for the host, by name, pattern list or hash', () => {
    // Prepare
    const knownHosts = [
      '# a comment',
      `github.com ssh-ed25519 ${KEY_A}`,
      `gitlab.com,github.com ecdsa-sha2-nistp256 ${KEY_B}`,
      `${hashed('github.com')} ssh-rsa ${KEY_C}`,
      `other.example ssh-ed25519 ${KEY_C}`,
    ].join('\n');

    // Act
    const keys = knownHostKeys(knownHosts, at('github.com'));

    // Assess
    assert.deepEqual(names(keys.trusted), ['key-a', 'key-b', 'key-c']);
    assert.deepEqual(keys.revoked, []);
  });

  it('needs the [host]:port form for another port than 22', () => {
    // Prepare
    const knownHosts = [
      `git.example.com ssh-ed25519 ${KEY_A}`,
      `[git.example.com]:2222 ssh-ed25519 ${KEY_B}`,
      `${hashed('[git.example.com]:2222')} ssh-ed25519 ${KEY_C}`,
    ].join('\n');

    // Act
    const onOtherPort = knownHostKeys(knownHosts, at('git.example.com', 2222));
    const onDefaultPort = knownHostKeys(knownHosts, at('git.example.com'));

    // Assess
    assert.deepEqual(names(onOtherPort.trusted), ['key-b', 'key-c']);
    assert.deepEqual(names(onDefaultPort.trusted), ['key-a']);
  });

  it('honours wildcards and negations, and keeps @revoked keys apart', () => {
    // Prepare
    const knownHosts = [
      `*.example.com,!evil.example.com ssh-ed25519 ${KEY_A}`,
      `@revoked *.example.com ssh-ed25519 ${KEY_B}`,
      `@cert-authority *.example.com ssh-ed25519 ${KEY_C}`,
    ].join('\n');

    // Act
    const good = knownHostKeys(knownHosts, at('git.example.com'));
    const evil = knownHostKeys(knownHosts, at('evil.example.com'));

    // Assess
    assert.deepEqual(names(good.trusted), ['key-a']);
    assert.deepEqual(names(good.revoked), ['key-b']);
    assert.deepEqual(names(evil.trusted), []);
  });

  it('does not read a dot in a pattern as any character', () => {
    // Act
    const keys = knownHostKeys(`git.example.com ssh-ed25519 ${KEY_A}`, at('gitxexample.com'));

    // Assess
    assert.deepEqual(keys.trusted, []);
  });
});

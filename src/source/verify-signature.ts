/**
 * `verify: {keys: [...]}`: the resolved commit must carry a valid signature
 * (the commit's `gpgsig` header, as `git commit -S` writes it) by one of the
 * trusted keys, else the revision is refused before anything is stored.
 *
 * - OpenPGP signatures are checked by openpgp.js (a maintained
 *   implementation), against the armored public keys given.
 * - SSH signatures (`gpg.format=ssh`, the SSHSIG format of OpenSSH's
 *   PROTOCOL.sshsig) are small enough to check here with node:crypto:
 *   namespace `git`, SHA-512 or SHA-256 of the commit, and an Ed25519, ECDSA
 *   (P-256/384/521) or RSA (rsa-sha2-256/512) key that must be one of the
 *   `ssh-...` lines given.
 *
 * The signed payload is the commit object without its `gpgsig` header, as
 * git verifies it. Messages name the commit and the signer seen (an OpenPGP
 * key id or an SSH key's SHA256 fingerprint), never key material.
 */
import { createHash, createPublicKey, verify as verifyBytes, type KeyObject } from 'node:crypto';
import { DriftlessError, messageOf } from '../errors.ts';

/** The commit is unsigned, badly signed, or signed by a key not trusted. */
export class VerificationError extends DriftlessError {
  readonly code = 'VerificationFailed';
}

export interface VerifiedSignature {
  readonly format: 'openpgp' | 'ssh';
  /** OpenPGP key id (hex) or SSH `SHA256:...` fingerprint. */
  readonly signer: string;
}

/** The commit split into what was signed and the signature (undefined: unsigned). */
export function splitSignedCommit(raw: Uint8Array): {
  readonly payload: Buffer;
  readonly signature: string | undefined;
} {
  const text = Buffer.from(raw).toString('latin1');
  const headerEnd = text.indexOf('\n\n');
  const headers = headerEnd < 0 ? text : text.slice(0, headerEnd + 1);
  const marker = headers.indexOf('\ngpgsig ');
  if (marker < 0) return { payload: Buffer.from(raw), signature: undefined };
  const start = marker + 1;
  // The header continues on lines that start with a space.
  let end = text.indexOf('\n', start);
  while (end >= 0 && text[end + 1] === ' ') end = text.indexOf('\n', end + 1);
  const header = text.slice(start + 'gpgsig '.length, end);
  const signature = header.replace(/\n /g, '\n');
  const payload = Buffer.from(text.slice(0, start) + text.slice(end + 1), 'latin1');
  return { payload, signature };
}

/** Trusted keys, from the texts the `verify.keys` references hold (armored blocks and `ssh-` lines). */
export interface TrustedKeys {
  readonly armored: string[];
  readonly ssh: Buffer[];
}

export function parseTrustedKeys(texts: readonly string[]): TrustedKeys {
  const armored: string[] = [];
  const ssh: Buffer[] = [];
  for (const text of texts) {
    for (const block of text.match(
      /-----BEGIN PGP PUBLIC KEY BLOCK-----[\s\S]*?-----END PGP PUBLIC KEY BLOCK-----/g,
    ) ?? []) {
      armored.push(block);
    }
    for (const line of text.split(/\r?\n/)) {
      const match = /^(?:\S+\s+)?((?:ssh-|ecdsa-sha2-)\S+)\s+([A-Za-z0-9+/=]+)/.exec(line.trim());
      if (match && !line.includes('BEGIN')) ssh.push(Buffer.from(match[2]!, 'base64'));
    }
  }
  return { armored, ssh };
}

/** Checks `raw` (a commit object) against `trusted`; throws a {@link VerificationError} naming `commit`. */
export async function verifyCommitSignature(
  raw: Uint8Array,
  trusted: TrustedKeys,
  commit: string,
): Promise<VerifiedSignature> {
  const { payload, signature } = splitSignedCommit(raw);
  if (signature === undefined) throw new VerificationError(`commit ${commit} is not signed`);
  if (signature.startsWith('-----BEGIN SSH SIGNATURE-----')) {
    return verifySsh(payload, signature, trusted.ssh, commit);
  }
  if (signature.startsWith('-----BEGIN PGP SIGNATURE-----')) {
    return verifyOpenPgp(payload, signature, trusted.armored, commit);
  }
  throw new VerificationError(
    `commit ${commit} carries a signature of a kind Driftless does not check (not OpenPGP, not SSH)`,
  );
}

async function verifyOpenPgp(
  payload: Buffer,
  armoredSignature: string,
  armoredKeys: readonly string[],
  commit: string,
): Promise<VerifiedSignature> {
  // Loaded on first use: only tracks with OpenPGP-signed commits pay for it.
  const openpgp = await import('openpgp');
  let signature: Awaited<ReturnType<typeof openpgp.readSignature>>;
  try {
    signature = await openpgp.readSignature({ armoredSignature });
  } catch (error) {
    throw new VerificationError(
      `commit ${commit}: its OpenPGP signature cannot be read: ${messageOf(error)}`,
    );
  }
  const signer =
    signature
      .getSigningKeyIDs()
      .map((id) => id.toHex().toUpperCase())
      .join(', ') || 'unknown';
  const keys = (
    await Promise.all(
      armoredKeys.map((armoredKey) => openpgp.readKeys({ armoredKeys: armoredKey })),
    )
  ).flat();
  const trusted = keys.some((key) =>
    signature.getSigningKeyIDs().some((id) => key.getKeys(id).length > 0),
  );
  if (!trusted) {
    throw new VerificationError(
      `commit ${commit} is signed by OpenPGP key ${signer}, which is not one of verify.keys`,
    );
  }
  const result = await openpgp.verify({
    message: await openpgp.createMessage({ binary: payload }),
    signature,
    verificationKeys: keys,
  });
  for (const entry of result.signatures) {
    try {
      await entry.verified;
      return { format: 'openpgp', signer: entry.keyID.toHex().toUpperCase() };
    } catch {
      // Try the next signature of the commit, if any.
    }
  }
  throw new VerificationError(
    `commit ${commit}: the OpenPGP signature by ${signer} does not match the commit (altered after signing)`,
  );
}

/** SSH wire-format reader: uint32 lengths, big-endian. */
class WireReader {
  private offset = 0;
  constructor(private readonly data: Buffer) {}
  uint32(): number {
    if (this.offset + 4 > this.data.length) throw new Error('truncated');
    const value = this.data.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }
  bytes(): Buffer {
    const length = this.uint32();
    if (this.offset + length > this.data.length) throw new Error('truncated');
    const value = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
  string(): string {
    return this.bytes().toString('latin1');
  }
}

function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'latin1') : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** `SHA256:<base64 without padding>`, as ssh-keygen -l prints it. */
export function sshFingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

const CURVES: Record<string, { crv: string; hash: string; size: number }> = {
  nistp256: { crv: 'P-256', hash: 'sha256', size: 32 },
  nistp384: { crv: 'P-384', hash: 'sha384', size: 48 },
  nistp521: { crv: 'P-521', hash: 'sha512', size: 66 },
};

/** An SSH public key blob as a node:crypto key, and how its signatures are checked. */
function sshPublicKey(blob: Buffer): {
  key: KeyObject;
  check: (data: Buffer, sigType: string, sig: Buffer) => boolean;
} {
  const reader = new WireReader(blob);
  const type = reader.string();
  const b64 = (bytes: Buffer) => bytes.toString('base64url');
  const unsigned = (bytes: Buffer) => (bytes[0] === 0 ? bytes.subarray(1) : bytes);
  if (type === 'ssh-ed25519') {
    const key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: b64(reader.bytes()) },
      format: 'jwk',
    });
    return {
      key,
      check: (data, sigType, sig) => sigType === 'ssh-ed25519' && verifyBytes(null, data, key, sig),
    };
  }
  if (type === 'ssh-rsa') {
    const e = unsigned(reader.bytes());
    const n = unsigned(reader.bytes());
    const key = createPublicKey({ key: { kty: 'RSA', n: b64(n), e: b64(e) }, format: 'jwk' });
    return {
      key,
      check: (data, sigType, sig) => {
        const hash =
          sigType === 'rsa-sha2-512' ? 'sha512' : sigType === 'rsa-sha2-256' ? 'sha256' : undefined;
        return hash !== undefined && verifyBytes(hash, data, key, sig);
      },
    };
  }
  const curveName = /^ecdsa-sha2-(nistp\d+)$/.exec(type)?.[1];
  const curve = curveName === undefined ? undefined : CURVES[curveName];
  if (curve !== undefined) {
    reader.string(); // the curve's name again
    const point = reader.bytes(); // 0x04 || x || y
    const x = point.subarray(1, 1 + curve.size);
    const y = point.subarray(1 + curve.size);
    const key = createPublicKey({
      key: { kty: 'EC', crv: curve.crv, x: b64(x), y: b64(y) },
      format: 'jwk',
    });
    return {
      key,
      check: (data, sigType, sig) => {
        if (sigType !== type) return false;
        const inner = new WireReader(sig);
        const pad = (bytes: Buffer) =>
          Buffer.concat([Buffer.alloc(curve.size), unsigned(bytes)]).subarray(-curve.size);
        const r = pad(inner.bytes());
        const s = pad(inner.bytes());
        return verifyBytes(
          curve.hash,
          data,
          { key, dsaEncoding: 'ieee-p1363' },
          Buffer.concat([r, s]),
        );
      },
    };
  }
  throw new Error(`SSH key type ${type} is not supported`);
}

function verifySsh(
  payload: Buffer,
  armored: string,
  trusted: readonly Buffer[],
  commit: string,
): VerifiedSignature {
  let publicKey: Buffer;
  let namespace: string;
  let reserved: Buffer;
  let hashAlgorithm: string;
  let sigType: string;
  let sigBytes: Buffer;
  try {
    const body = armored
      .replace('-----BEGIN SSH SIGNATURE-----', '')
      .replace('-----END SSH SIGNATURE-----', '')
      .replace(/\s+/g, '');
    const blob = Buffer.from(body, 'base64');
    if (blob.subarray(0, 6).toString('latin1') !== 'SSHSIG') throw new Error('no SSHSIG magic');
    const reader = new WireReader(blob.subarray(6));
    if (reader.uint32() !== 1) throw new Error('unknown SSHSIG version');
    publicKey = reader.bytes();
    namespace = reader.string();
    reserved = reader.bytes();
    hashAlgorithm = reader.string();
    const signature = new WireReader(reader.bytes());
    sigType = signature.string();
    sigBytes = signature.bytes();
  } catch (error) {
    throw new VerificationError(
      `commit ${commit}: its SSH signature cannot be read (${messageOf(error)})`,
    );
  }
  const signer = sshFingerprint(publicKey);
  if (!trusted.some((key) => key.equals(publicKey))) {
    throw new VerificationError(
      `commit ${commit} is signed by SSH key ${signer}, which is not one of verify.keys`,
    );
  }
  if (namespace !== 'git') {
    throw new VerificationError(
      `commit ${commit}: the SSH signature by ${signer} is for namespace "${namespace}", not "git"`,
    );
  }
  if (hashAlgorithm !== 'sha512' && hashAlgorithm !== 'sha256') {
    throw new VerificationError(
      `commit ${commit}: the SSH signature by ${signer} uses hash ${hashAlgorithm}`,
    );
  }
  const signed = Buffer.concat([
    Buffer.from('SSHSIG', 'latin1'),
    sshString(namespace),
    sshString(reserved),
    sshString(hashAlgorithm),
    sshString(createHash(hashAlgorithm).update(payload).digest()),
  ]);
  let valid: boolean;
  try {
    valid = sshPublicKey(publicKey).check(signed, sigType, sigBytes);
  } catch (error) {
    throw new VerificationError(
      `commit ${commit}: the SSH signature by ${signer} cannot be checked: ${messageOf(error)}`,
    );
  }
  if (!valid) {
    throw new VerificationError(
      `commit ${commit}: the SSH signature by ${signer} does not match the commit (altered after signing)`,
    );
  }
  return { format: 'ssh', signer };
}

/**
 * AWS credentials as the SigV4 signer and the SDK clients take them, and a
 * node:crypto SHA-256 for the signer, so signing needs no extra crypto
 * package.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

/** Static AWS credentials; `expiration` set for temporary ones. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

function toBuffer(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/**
 * SHA-256, or HMAC-SHA-256 when given a secret: the `Checksum` the smithy
 * SignatureV4 signer constructs (what @smithy/hash-node provides).
 */
export class NodeSha256 {
  readonly #secret: Buffer | undefined;
  #hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.#secret = secret === undefined ? undefined : toBuffer(secret);
    this.#hash = this.#fresh();
  }

  #fresh(): Hash | Hmac {
    return this.#secret === undefined ? createHash('sha256') : createHmac('sha256', this.#secret);
  }

  update(data: SourceData): void {
    this.#hash.update(toBuffer(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }

  reset(): void {
    this.#hash = this.#fresh();
  }
}

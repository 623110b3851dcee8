/**
 * A local AWS KMS for SOPS' AWS KMS path: moto's server (PyPI, pinned in
 * test/testbin/python/requirements.txt and installed outside the checkout by
 * test/testbin/python/install.sh), one per test file, on a free loopback port.
 *
 * sops reaches it as it would reach AWS, through aws-sdk-go-v2's own
 * settings: `AWS_ENDPOINT_URL_KMS`, a region and (throwaway) credentials —
 * {@link KmsServer.env}. Keys are created with KMS's JSON API; moto accepts
 * any credentials, so requests are not signed.
 */
import { startMoto } from './moto.ts';

export interface KmsServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** What the AWS SDK in sops (or in Driftless) needs to use this server instead of AWS. */
  readonly env: Readonly<Record<string, string>>;
  /** A new symmetric key; its ARN. */
  createKey(): Promise<string>;
  stop(): Promise<void>;
}

/** Starts moto's server; throws with its output when it cannot start (tests fail, never skip). */
export async function startKms(): Promise<KmsServer> {
  const moto = await startMoto();
  const { endpoint, env } = moto;
  return {
    endpoint,
    env,
    async createKey() {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'TrentService.CreateKey',
          // moto reads the region from the credential scope.
          authorization:
            'AWS4-HMAC-SHA256 Credential=testing/20260101/eu-west-1/kms/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: JSON.stringify({ Description: 'driftless test key' }),
      });
      if (!response.ok)
        throw new Error(`KMS CreateKey: ${response.status} ${await response.text()}`);
      const body = (await response.json()) as { KeyMetadata: { Arn: string } };
      return body.KeyMetadata.Arn;
    },
    stop: () => moto.stop(),
  };
}

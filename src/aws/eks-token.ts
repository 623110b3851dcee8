/**
 * An EKS bearer token, the aws-iam-authenticator way (what `aws eks
 * get-token` prints): a presigned STS `GetCallerIdentity` URL whose signed
 * headers include `x-k8s-aws-id: <cluster name>`, base64url-encoded without
 * padding behind `k8s-aws-v1.`. EKS calls the URL to learn the caller's IAM
 * identity; signing the cluster name in keeps a token for one cluster from
 * being replayed against another.
 */
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256, type AwsCredentials } from './aws-credentials.ts';

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';

/** The presigned URL's own expiry, as aws-iam-authenticator sets it. */
const PRESIGN_SECONDS = 60;
/**
 * EKS accepts a token for 15 minutes from its signing time whatever the URL
 * says; like `aws eks get-token`, report a minute less to allow for clock skew.
 */
const TOKEN_LIFETIME_MS = 14 * 60_000;

export interface EksTokenOptions {
  /** The EKS cluster's name (not its ARN). */
  readonly clusterName: string;
  /** The region of the STS endpoint; the cluster's region. */
  readonly region: string;
  readonly credentials: AwsCredentials;
  /** Signing time; default now. */
  readonly now?: Date;
}

export interface EksToken {
  readonly token: string;
  /** When EKS stops accepting it (less a minute). */
  readonly expiresAt: Date;
}

/** The regional STS host; China regions live under amazonaws.com.cn. */
export function stsHostname(region: string): string {
  return `sts.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

/** RFC 3986 percent-encoding, as SigV4 canonicalises query strings. */
function encode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** A token for `clusterName`; see the module comment. */
export async function eksToken(options: EksTokenOptions): Promise<EksToken> {
  const signingDate = options.now ?? new Date();
  const hostname = stsHostname(options.region);
  const signer = new SignatureV4({
    service: 'sts',
    region: options.region,
    credentials: options.credentials,
    sha256: NodeSha256,
    uriEscapePath: true,
  });
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, 'x-k8s-aws-id': options.clusterName },
    },
    { expiresIn: PRESIGN_SECONDS, signingDate },
  );
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).map(
        (item) => `${encode(name)}=${encode(item ?? '')}`,
      ),
    )
    .sort()
    .join('&');
  const url = `https://${hostname}/?${query}`;
  return {
    token: EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url'),
    expiresAt: new Date(signingDate.getTime() + TOKEN_LIFETIME_MS),
  };
}

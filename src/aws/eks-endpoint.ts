/**
 * The API server endpoint of an EKS cluster: URL and CA from `eks:DescribeCluster`,
 * the bearer token from {@link eksToken}, optionally as an assumed role
 * (`roleArn`, e.g. a role in the cluster's account that its access entry
 * names).
 *
 * The transport asks for credentials before every request; a new token is
 * signed before the current one gets close to its 15 minutes (and after a
 * 401), so a connection cached for the container's lifetime keeps working
 * and a job never starts with a token about to expire.
 */
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { ClusterEndpoint } from '../cluster/cluster-endpoint.ts';
import { ClusterUnreachableError } from '../cluster/errors.ts';
import type { AwsCredentials } from './aws-credentials.ts';
import { eksToken, type EksToken } from './eks-token.ts';

/** The `eks:` of a cluster in driftless.yaml. */
export interface EksClusterRef {
  readonly name: string;
  readonly region: string;
  readonly roleArn?: string;
}

/** What an EKS cluster looks like from outside. */
export interface EksEndpoint {
  /** `https://...` */
  readonly endpoint: string;
  /** The cluster CA, base64 PEM, as DescribeCluster returns it. */
  readonly certificateAuthority: string;
}

/** The AWS calls behind an EKS connection; {@link sdkEksAccess} makes them with the AWS SDK. */
export interface EksAccess {
  /** The function's own credentials, or the role's when `roleArn` is given (cached by the implementation). */
  credentials(region: string, roleArn?: string): Promise<AwsCredentials>;
  describeCluster(cluster: EksClusterRef, credentials: AwsCredentials): Promise<EksEndpoint>;
}

export interface EksEndpointOptions {
  readonly now?: () => Date;
  /** A token with less than this left is replaced; default 6 minutes (longer than an apply job runs). */
  readonly refreshMarginMs?: number;
}

const DEFAULT_REFRESH_MARGIN_MS = 6 * 60_000;

/** The endpoint of `cluster`, its token refreshed before expiry; see the module comment. */
export async function eksEndpoint(
  cluster: EksClusterRef,
  access: EksAccess,
  options: EksEndpointOptions = {},
): Promise<ClusterEndpoint> {
  const now = options.now ?? (() => new Date());
  const margin = options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS;
  const label = `EKS cluster "${cluster.name}" (${cluster.region})`;

  let current: EksToken | undefined;
  let pending: Promise<EksToken> | undefined;
  const sign = async (): Promise<EksToken> => {
    const credentials = await access.credentials(cluster.region, cluster.roleArn);
    const signed = await eksToken({
      clusterName: cluster.name,
      region: cluster.region,
      credentials,
      now: now(),
    });
    // A token signed with temporary credentials dies with them.
    const expiration = credentials.expiration?.getTime();
    return expiration !== undefined && expiration < signed.expiresAt.getTime()
      ? { token: signed.token, expiresAt: new Date(expiration) }
      : signed;
  };
  const token = async (): Promise<string> => {
    if (current === undefined || current.expiresAt.getTime() - now().getTime() < margin) {
      pending ??= sign().finally(() => (pending = undefined));
      current = await pending;
    }
    return current.token;
  };

  const credentials = await access.credentials(cluster.region, cluster.roleArn);
  let endpoint: EksEndpoint;
  try {
    endpoint = await access.describeCluster(cluster, credentials);
  } catch (error) {
    const name = (error as { name?: unknown } | null)?.name;
    const reason =
      name === 'ResourceNotFoundException'
        ? 'not found'
        : `cannot be described: ${(error as Error)?.message ?? String(error)}`;
    throw new ClusterUnreachableError(`${label}: ${reason}`, { cause: error });
  }
  // Signed now, so a credential problem shows at connect time rather than as a 401 later.
  await token();

  return {
    server: endpoint.endpoint.replace(/\/$/, ''),
    ca: Buffer.from(endpoint.certificateAuthority, 'base64'),
    insecureSkipTlsVerify: false,
    credentials: {
      current: async () => ({ headers: { authorization: `Bearer ${await token()}` } }),
      invalidate: () => {
        current = undefined;
      },
    },
    label,
  };
}

/** Assumed credentials with less than this left are renewed: a token signed with them must outlive its 14 minutes. */
const ROLE_RENEW_MARGIN_MS = 20 * 60_000;

/**
 * {@link EksAccess} over the AWS SDK: an STS client per region, kept for the
 * container. The SDK is imported statically, by name, for the reason
 * src/aws/secrets.ts gives (the apply bundle 1.34 -> 1.17 MB with the secret readers).
 */
export function sdkEksAccess(now: () => Date = () => new Date()): EksAccess {
  const sts = new Map<string, STSClient>();
  const assumed = new Map<string, Promise<AwsCredentials>>();
  const stsClient = (region: string) => {
    let client = sts.get(region);
    if (client === undefined) {
      client = new STSClient({ region });
      sts.set(region, client);
    }
    return client;
  };
  const assume = async (region: string, roleArn: string): Promise<AwsCredentials> => {
    const answer = await stsClient(region).send(
      new AssumeRoleCommand({
        RoleArn: roleArn,
        RoleSessionName: 'driftless-apply',
        DurationSeconds: 3600,
      }),
    );
    const c = answer.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey) {
      throw new ClusterUnreachableError(`assuming ${roleArn} returned no credentials`);
    }
    return {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      ...(c.SessionToken === undefined ? {} : { sessionToken: c.SessionToken }),
      ...(c.Expiration === undefined ? {} : { expiration: c.Expiration }),
    };
  };

  return {
    async credentials(region, roleArn) {
      if (roleArn === undefined) {
        // The SDK's default chain (the function's role in Lambda), memoised by the client.
        const own = await stsClient(region).config.credentials();
        return own;
      }
      const key = `${region} ${roleArn}`;
      const cached = assumed.get(key);
      if (cached !== undefined) {
        const expiration = (await cached.catch(() => undefined))?.expiration?.getTime();
        if (expiration !== undefined && expiration - now().getTime() > ROLE_RENEW_MARGIN_MS) {
          return cached;
        }
      }
      const fresh = assume(region, roleArn);
      assumed.set(key, fresh);
      fresh.catch(() => {
        if (assumed.get(key) === fresh) assumed.delete(key);
      });
      return fresh;
    },
    async describeCluster(cluster, credentials) {
      const eks = new EKSClient({ region: cluster.region, credentials });
      try {
        const answer = await eks.send(new DescribeClusterCommand({ name: cluster.name }));
        const endpoint = answer.cluster?.endpoint;
        const certificateAuthority = answer.cluster?.certificateAuthority?.data;
        if (!endpoint || !certificateAuthority) {
          throw new ClusterUnreachableError(
            `EKS cluster "${cluster.name}" has no endpoint or CA yet (status ${answer.cluster?.status ?? 'unknown'})`,
          );
        }
        return { endpoint, certificateAuthority };
      } finally {
        eks.destroy();
      }
    },
  };
}

import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { ClusterUnreachableError } from '../../src/cluster/errors.ts';
import type { AwsCredentials } from '../../src/aws/aws-credentials.ts';
import { eksEndpoint, type EksAccess } from '../../src/aws/eks-endpoint.ts';
import { EKS_TOKEN_PREFIX, eksToken, stsHostname } from '../../src/aws/eks-token.ts';

// AWS's documentation example credentials: fixed inputs make SigV4 deterministic.
const CREDENTIALS: AwsCredentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const NOW = new Date('2026-01-02T03:04:05Z');

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** SigV4 presigning written out from the specification, independently of the signer under test. */
function expectedSignature(url: URL, clusterName: string, secret: string): string {
  const params = [...url.searchParams.entries()].filter(([name]) => name !== 'X-Amz-Signature');
  const query = params
    .map(([name, value]) => `${rfc3986(name)}=${rfc3986(value)}`)
    .sort()
    .join('&');
  const canonicalRequest = [
    'GET',
    '/',
    query,
    `host:${url.hostname}\nx-k8s-aws-id:${clusterName}\n`,
    'host;x-k8s-aws-id',
    sha256Hex(''),
  ].join('\n');
  const amzDate = url.searchParams.get('X-Amz-Date') ?? '';
  const scope = `${amzDate.slice(0, 8)}/us-east-1/sts/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`, 'utf8');
  for (const part of [amzDate.slice(0, 8), 'us-east-1', 'sts', 'aws4_request']) {
    key = createHmac('sha256', key).update(part, 'utf8').digest();
  }
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

function decode(token: string): URL {
  return new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
}

describe('eksToken', () => {
  it('presigns GetCallerIdentity the aws-iam-authenticator way', async () => {
    // Prepare
    const options = {
      clusterName: 'prod',
      region: 'us-east-1',
      credentials: CREDENTIALS,
      now: NOW,
    };

    // Act
    const { token, expiresAt } = await eksToken(options);

    // Assess
    assert.ok(token.startsWith('k8s-aws-v1.'));
    assert.match(token.slice(EKS_TOKEN_PREFIX.length), /^[A-Za-z0-9_-]+$/, 'base64url, no padding');
    const url = decode(token);
    assert.equal(url.origin, 'https://sts.us-east-1.amazonaws.com');
    assert.equal(url.pathname, '/');
    const q = url.searchParams;
    assert.equal(q.get('Action'), 'GetCallerIdentity');
    assert.equal(q.get('Version'), '2011-06-15');
    assert.equal(q.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
    assert.equal(q.get('X-Amz-Credential'), 'AKIDEXAMPLE/20260102/us-east-1/sts/aws4_request');
    assert.equal(q.get('X-Amz-Date'), '20260102T030405Z');
    assert.equal(q.get('X-Amz-Expires'), '60');
    assert.equal(q.get('X-Amz-SignedHeaders'), 'host;x-k8s-aws-id');
    assert.equal(q.get('X-Amz-Security-Token'), null);
    assert.equal(
      q.get('X-Amz-Signature'),
      expectedSignature(url, 'prod', CREDENTIALS.secretAccessKey),
    );
    assert.equal(expiresAt.toISOString(), '2026-01-02T03:18:05.000Z');
  });

  it('is the same token for the same clock and credentials', async () => {
    // Prepare
    const options = {
      clusterName: 'prod',
      region: 'us-east-1',
      credentials: CREDENTIALS,
      now: NOW,
    };

    // Act
    const [a, b] = await Promise.all([eksToken(options), eksToken(options)]);

    // Assess
    assert.equal(a.token, b.token);
  });

  it('signs the cluster name in, so a token for one cluster fails for another', async () => {
    // Prepare
    const base = { region: 'us-east-1', credentials: CREDENTIALS, now: NOW };

    // Act
    const prod = decode((await eksToken({ ...base, clusterName: 'prod' })).token);
    const dev = decode((await eksToken({ ...base, clusterName: 'dev' })).token);

    // Assess
    assert.notEqual(
      prod.searchParams.get('X-Amz-Signature'),
      dev.searchParams.get('X-Amz-Signature'),
    );
    assert.equal(
      dev.searchParams.get('X-Amz-Signature'),
      expectedSignature(dev, 'dev', CREDENTIALS.secretAccessKey),
    );
  });

  it('carries the session token of temporary credentials', async () => {
    // Prepare
    const credentials = { ...CREDENTIALS, sessionToken: 'session/token+with=odd chars' };

    // Act
    const { token } = await eksToken({
      clusterName: 'prod',
      region: 'us-east-1',
      credentials,
      now: NOW,
    });

    // Assess
    const url = decode(token);
    assert.equal(url.searchParams.get('X-Amz-Security-Token'), credentials.sessionToken);
    assert.equal(
      url.searchParams.get('X-Amz-Signature'),
      expectedSignature(url, 'prod', CREDENTIALS.secretAccessKey),
    );
  });

  it('uses the regional STS endpoint, amazonaws.com.cn in China', () => {
    // Assess
    assert.equal(stsHostname('eu-west-1'), 'sts.eu-west-1.amazonaws.com');
    assert.equal(stsHostname('cn-north-1'), 'sts.cn-north-1.amazonaws.com.cn');
  });
});

/** An EksAccess that records calls, over a clock the test moves. */
function fakeAccess(overrides: Partial<EksAccess> = {}) {
  const calls: string[] = [];
  const access: EksAccess = {
    async credentials(region, roleArn) {
      calls.push(`credentials ${region} ${roleArn ?? '-'}`);
      return CREDENTIALS;
    },
    async describeCluster(cluster) {
      calls.push(`describe ${cluster.name}`);
      return {
        endpoint: 'https://ABC.gr7.us-east-1.eks.amazonaws.com',
        certificateAuthority: Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64'),
      };
    },
    ...overrides,
  };
  return { access, calls };
}

async function bearer(endpoint: Awaited<ReturnType<typeof eksEndpoint>>): Promise<string> {
  const { headers } = await endpoint.credentials.current();
  return String(headers.authorization ?? '');
}

describe('eksEndpoint', () => {
  it('points at the cluster endpoint and CA and authenticates with an EKS token', async () => {
    // Prepare
    const { access, calls } = fakeAccess();
    let now = NOW;

    // Act
    const kc = await eksEndpoint(
      { name: 'prod', region: 'us-east-1', roleArn: 'arn:aws:iam::1:role/x' },
      access,
      {
        now: () => now,
      },
    );

    // Assess
    assert.equal(kc.server, 'https://ABC.gr7.us-east-1.eks.amazonaws.com');
    assert.equal(kc.insecureSkipTlsVerify, false);
    assert.equal(kc.ca?.toString(), '-----BEGIN CERTIFICATE-----\n');
    const expected = (
      await eksToken({ clusterName: 'prod', region: 'us-east-1', credentials: CREDENTIALS, now })
    ).token;
    assert.equal(await bearer(kc), `Bearer ${expected}`);
    assert.deepEqual(calls.slice(0, 2), [
      'credentials us-east-1 arn:aws:iam::1:role/x',
      'describe prod',
    ]);
    now = new Date(NOW.getTime() + 60_000);
    assert.equal(await bearer(kc), `Bearer ${expected}`, 'reused while far from expiry');
  });

  it('signs a new token before the current one gets close to expiry', async () => {
    // Prepare
    const { access } = fakeAccess();
    let now = NOW;
    const kc = await eksEndpoint({ name: 'prod', region: 'us-east-1' }, access, {
      now: () => now,
    });
    const first = await bearer(kc);

    // Act
    now = new Date(NOW.getTime() + 9 * 60_000);
    const second = await bearer(kc);

    // Assess
    assert.notEqual(second, first);
    const signedAt = decode(second.slice('Bearer '.length)).searchParams.get('X-Amz-Date');
    assert.equal(signedAt, '20260102T031305Z');
  });

  it('renews a token signed with temporary credentials before they expire', async () => {
    // Prepare
    let now = NOW;
    const { access } = fakeAccess({
      async credentials() {
        return {
          ...CREDENTIALS,
          sessionToken: 't',
          expiration: new Date(now.getTime() + 7 * 60_000),
        };
      },
    });
    const kc = await eksEndpoint({ name: 'prod', region: 'us-east-1' }, access, {
      now: () => now,
    });
    const first = await bearer(kc);

    // Act
    now = new Date(NOW.getTime() + 2 * 60_000);
    const second = await bearer(kc);

    // Assess: 5 minutes of credentials left is inside the 6-minute margin.
    assert.notEqual(second, first);
  });

  it('names the cluster when it cannot be described', async () => {
    // Prepare
    const { access } = fakeAccess({
      async describeCluster() {
        throw Object.assign(new Error('No cluster found for name: prod.'), {
          name: 'ResourceNotFoundException',
        });
      },
    });

    // Act + Assess
    await assert.rejects(
      eksEndpoint({ name: 'prod', region: 'eu-west-1' }, access),
      (error: unknown) =>
        error instanceof ClusterUnreachableError &&
        error.message === 'EKS cluster "prod" (eu-west-1): not found',
    );
  });
});

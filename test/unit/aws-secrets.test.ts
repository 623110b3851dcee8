import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAwsSecretReader } from '../../src/aws/secrets.ts';
import { SecretUnavailableError } from '../../src/config/read-secret.ts';
import { MissingEnvError } from '../../src/config/env.ts';

function counting(values: Record<string, string>) {
  const calls: string[] = [];
  const fetch = async (id: string): Promise<string> => {
    calls.push(id);
    const value = values[id];
    if (value === undefined) {
      throw Object.assign(new Error(`Secrets Manager can't find ${id}`), {
        name: 'ResourceNotFoundException',
      });
    }
    return value;
  };
  return { calls, fetch };
}

describe('createAwsSecretReader', () => {
  it('reads Secrets Manager and SSM references, once per container while fresh', async () => {
    // Prepare
    const sm = counting({ 'driftless/git/token': 's3cret' });
    const ssm = counting({ '/driftless/cluster/kubeconfig': 'apiVersion: v1' });
    let now = 0;
    const read = createAwsSecretReader({
      fetchers: { secretsManager: sm.fetch, ssm: ssm.fetch },
      now: () => now,
    });

    // Act
    const first = await read({ scheme: 'aws-secretsmanager', id: 'driftless/git/token' });
    const again = await read({ scheme: 'aws-secretsmanager', id: 'driftless/git/token' });
    const parameter = await read({ scheme: 'aws-ssm', name: '/driftless/cluster/kubeconfig' });
    now = 5 * 60_000 + 1;
    await read({ scheme: 'aws-secretsmanager', id: 'driftless/git/token' });

    // Assess
    assert.equal(first, 's3cret');
    assert.equal(again, 's3cret');
    assert.equal(parameter, 'apiVersion: v1');
    assert.deepEqual(
      sm.calls,
      ['driftless/git/token', 'driftless/git/token'],
      'asked again after 5 minutes',
    );
    assert.deepEqual(ssm.calls, ['/driftless/cluster/kubeconfig']);
  });

  it('names the reference, never a value, when a secret is missing, and asks again next time', async () => {
    // Prepare
    const sm = counting({});
    const read = createAwsSecretReader({ fetchers: { secretsManager: sm.fetch } });
    const ref = { scheme: 'aws-secretsmanager', id: 'driftless/git/missing' } as const;

    // Act + Assess
    await assert.rejects(
      read(ref),
      (error: unknown) =>
        error instanceof SecretUnavailableError &&
        error.message === 'secret aws-secretsmanager:driftless/git/missing: not found',
    );
    await assert.rejects(read(ref), SecretUnavailableError);
    assert.equal(sm.calls.length, 2);
  });

  it('says when the role may not read a secret', async () => {
    // Prepare
    const read = createAwsSecretReader({
      fetchers: {
        ssm: async () => {
          throw Object.assign(
            new Error('User: arn:aws:sts::1:assumed-role/drift is not authorized'),
            {
              name: 'AccessDeniedException',
            },
          );
        },
      },
    });

    // Act + Assess
    await assert.rejects(
      read({ scheme: 'aws-ssm', name: '/driftless/cluster/x' }),
      /access denied \(this function's role may not read it\)/,
    );
  });

  it('reads env: references through the env helper', async () => {
    // Prepare
    const read = createAwsSecretReader({ env: { GITHUB_WEBHOOK_SECRET: 'shh' } });

    // Act + Assess
    assert.equal(await read({ scheme: 'env', name: 'GITHUB_WEBHOOK_SECRET' }), 'shh');
    await assert.rejects(read({ scheme: 'env', name: 'UNSET_VARIABLE' }), MissingEnvError);
  });
});

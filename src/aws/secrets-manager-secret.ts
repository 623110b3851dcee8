/**
 * Reading one Secrets Manager secret. Imported by name, not as the SDK's
 * namespace, so esbuild keeps only the client and this one command.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AWS_REQUEST_TIMEOUTS } from '../aws-request-timeouts.ts';

/** A reader of Secrets Manager secrets (text, or binary read as UTF-8) over one client. */
export function secretsManagerReader(): (id: string) => Promise<string> {
  const sm = new SecretsManagerClient({ requestHandler: { ...AWS_REQUEST_TIMEOUTS } });
  return async (secretId) => {
    const answer = await sm.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (answer.SecretString !== undefined) return answer.SecretString;
    if (answer.SecretBinary !== undefined) return Buffer.from(answer.SecretBinary).toString('utf8');
    throw new Error('the secret has no value');
  };
}

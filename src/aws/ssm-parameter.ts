/**
 * Reading one SSM parameter. Imported by name, not as the SDK's namespace:
 * esbuild then keeps the client and this one command, not the hundreds of
 * SSM commands (about 200 KB of each bundle that reads secrets).
 */
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AWS_REQUEST_TIMEOUTS } from '../aws-request-timeouts.ts';

/** A reader of SSM parameters (decrypted SecureStrings) over one client. */
export function ssmParameterReader(): (name: string) => Promise<string> {
  const ssm = new SSMClient({ requestHandler: { ...AWS_REQUEST_TIMEOUTS } });
  return async (name) => {
    const answer = await ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    const value = answer.Parameter?.Value;
    if (value === undefined) throw new Error('the parameter has no value');
    return value;
  };
}

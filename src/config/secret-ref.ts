/**
 * Where a secret lives. Parsed and validated with the config, resolved only by
 * the function that is allowed to hold it (DESIGN.md), so reading the config
 * never touches a secret.
 */
export type SecretRef =
  | { readonly scheme: 'env'; readonly name: string }
  | { readonly scheme: 'file'; readonly path: string }
  | { readonly scheme: 'aws-secretsmanager'; readonly id: string }
  | { readonly scheme: 'aws-ssm'; readonly name: string };

/** The accepted forms, for error messages. */
export const SECRET_REF_FORMS = 'env:NAME, file:PATH, aws-secretsmanager:ID or aws-ssm:/path';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Secrets Manager accepts names of these characters or a full ARN.
const SECRETS_MANAGER_ID = /^(?:arn:[^\s]+|[A-Za-z0-9/_+=.@-]+)$/;
// SSM parameter names are slash-separated paths of these characters, or a full ARN.
const SSM_NAME = /^(?:arn:[^\s]+|[A-Za-z0-9_.\-/]+)$/;

/**
 * Parses `env:NAME`, `file:PATH`, `aws-secretsmanager:ID` or `aws-ssm:/path`.
 *
 * @returns the reference, or a message saying what is wrong with `text`.
 */
export function parseSecretRef(text: string): SecretRef | { readonly error: string } {
  const colon = text.indexOf(':');
  const scheme = colon < 0 ? '' : text.slice(0, colon);
  const rest = colon < 0 ? '' : text.slice(colon + 1);
  const quoted = JSON.stringify(text);
  switch (scheme) {
    case 'env':
      return ENV_NAME.test(rest)
        ? { scheme, name: rest }
        : { error: `${quoted} does not name a valid environment variable` };
    case 'file':
      return rest.trim() !== ''
        ? { scheme, path: rest }
        : { error: `${quoted} does not name a file` };
    case 'aws-secretsmanager':
      return SECRETS_MANAGER_ID.test(rest)
        ? { scheme, id: rest }
        : { error: `${quoted} does not name a Secrets Manager secret` };
    case 'aws-ssm':
      return SSM_NAME.test(rest)
        ? { scheme, name: rest }
        : { error: `${quoted} does not name an SSM parameter` };
    default:
      return { error: `${quoted} is not a secret reference (use ${SECRET_REF_FORMS})` };
  }
}

/** Renders a reference back to its `scheme:value` form, for messages and logs (it holds no secret). */
export function formatSecretRef(ref: SecretRef): string {
  switch (ref.scheme) {
    case 'env':
    case 'aws-ssm':
      return `${ref.scheme}:${ref.name}`;
    case 'file':
      return `file:${ref.path}`;
    case 'aws-secretsmanager':
      return `aws-secretsmanager:${ref.id}`;
  }
}

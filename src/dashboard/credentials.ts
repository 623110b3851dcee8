/**
 * Who a request to `driftless serve`'s dashboard is from: basic-auth users
 * and bearer tokens of the config's `dashboard:` (secret refs, read at start).
 * In AWS, API Gateway's authorizer does this instead (aws/dashboard-http.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Identity } from './http-types.ts';

export interface DashboardCredentials {
  readonly users: readonly { readonly name: string; readonly password: string }[];
  /**
   * The config's tokens in order; `undefined` for one that is ignored (empty), so that the
   * others keep their number: history names a token by its place in the config.
   */
  readonly tokens: readonly (string | undefined)[];
}

/**
 * Compared as digests: equal length, constant time, whatever was sent. An empty secret never
 * matches, on either side: an empty password or token file would otherwise let in anyone who
 * sends `Authorization: Bearer` or `user:` with nothing after it.
 */
function same(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  const equal = timingSafeEqual(digest(given), digest(expected));
  return equal && given !== '' && expected !== '';
}

function basicUser(encoded: string, credentials: DashboardCredentials): Identity {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const name = colon === -1 ? decoded : decoded.slice(0, colon);
  const password = colon === -1 ? '' : decoded.slice(colon + 1);
  // Every user is compared, so the time taken does not tell which names exist; `same` never
  // matches an empty password, sent or configured.
  let found: string | undefined;
  for (const user of credentials.users) {
    if (same(name, user.name) && same(password, user.password)) found = user.name;
  }
  return found === undefined
    ? { kind: 'anonymous', refused: 'wrong user name or password' }
    : { kind: 'user', name: found };
}

function bearerUser(token: string, credentials: DashboardCredentials): Identity {
  if (token === '') return { kind: 'anonymous', refused: 'no token after "Bearer"' };
  let found: number | undefined;
  credentials.tokens.forEach((expected, index) => {
    if (expected !== undefined && same(token, expected)) found = index;
  });
  // A token names no person: history says which of the config's tokens acted.
  return found === undefined
    ? { kind: 'anonymous', refused: 'the token is not valid' }
    : { kind: 'user', name: `token ${found + 1}` };
}

/** The identity an `Authorization` header proves; anonymous when there is none. */
export function identify(
  authorization: string | undefined,
  credentials: DashboardCredentials,
): Identity {
  if (authorization === undefined || authorization.trim() === '') return { kind: 'anonymous' };
  const [scheme, value = ''] = authorization.trim().split(/\s+/, 2);
  switch (scheme?.toLowerCase()) {
    case 'basic':
      return basicUser(value, credentials);
    case 'bearer':
      return bearerUser(value, credentials);
    default:
      // Never the header's text: a token sent without its scheme would be quoted back, and
      // serve logs the answers to refused actions.
      return {
        kind: 'anonymous',
        refused: 'authorization scheme is not supported (use "Bearer <token>" or Basic)',
      };
  }
}

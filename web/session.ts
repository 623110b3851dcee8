/**
 * Who is signed in, and the UI's own sign-in: user and password (basic) or
 * a token (bearer), kept as the Authorization header value for this tab.
 * Answers of 401 carry no WWW-Authenticate challenge, so the browser never
 * prompts: this form is the only way in.
 */
import type { SessionJson } from '../src/dashboard/types.ts';
import {
  ApiError,
  basicAuthorization,
  bearerAuthorization,
  getJson,
  messageOf,
  storeAuthorization,
  storedAuthorization,
} from './api.ts';
import { openDialog } from './dialog.ts';
import { h, replaceContent, uniqueId, type Child } from './dom.ts';

let current: SessionJson | null = null;
const listeners = new Set<() => void>();

export function currentSession(): SessionJson | null {
  return current;
}

/** Called after every sign-in, sign-out or session reload. */
export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function setSession(session: SessionJson | null): void {
  current = session;
  for (const listener of listeners) listener();
}

/**
 * The session when a gateway in front refused `api/session` (gatewayRefusal): the dashboard
 * itself answers its session to anyone. In AWS that route has the authorizer
 * whatever `readAccess` is, so that the function learns who asks. Under a JWT authorizer (401)
 * this page has none: the token form is the way in. Under IAM (403: the request was not signed,
 * or its principal may not invoke the route) the page cannot sign anyone in: a SigV4 signing
 * proxy in front of the browser signs every request, so the page says to open it through one.
 * The refusal does not say whether reads need sign-in; one read does, asked without
 * credentials: the gateway refuses it too when they do.
 */
async function gatewaySignIn(kind: 'gateway' | 'sigv4'): Promise<SessionJson> {
  const readsOpen = await getJson('api/tracks', { authorization: null }).then(
    () => true,
    () => false,
  );
  return {
    user: null,
    readAccess: readsOpen ? 'open' : 'authenticated',
    canAct: false,
    signIn: [kind],
  };
}

/**
 * How API Gateway's IAM authorizer refuses a request that is not signed (the page signs none):
 * 403 with the error type `MissingAuthenticationTokenException` and the message "Missing
 * Authentication Token", or `IncompleteSignatureException` for an Authorization header that is
 * no whole SigV4 signature (AWS Knowledge Center, "How do I troubleshoot HTTP 403 errors from API
 * Gateway?", https://repost.aws/knowledge-center/api-gateway-troubleshoot-403-forbidden, and
 * https://repost.aws/knowledge-center/api-gateway-iam-sigv4-mismatch: an unsigned request gets
 * "Missing Authentication Token"). An HTTP API, as the dashboard's is, answers an unsigned request
 * to an AWS_IAM route 403 `{"message":"Forbidden"}` (as API Gateway's emulators model it too,
 * e.g. https://github.com/KensioSoftware/yulin/issues/303).
 */
const IAM_ERROR_TYPES: ReadonlySet<string> = new Set([
  'MissingAuthenticationTokenException',
  'IncompleteSignatureException',
]);
const IAM_MESSAGES: ReadonlySet<string> = new Set(['Missing Authentication Token', 'Forbidden']);

function isIamRefusal({ gateway }: ApiError): boolean {
  return (
    (gateway.errorType !== undefined && IAM_ERROR_TYPES.has(gateway.errorType)) ||
    (gateway.message !== undefined && IAM_MESSAGES.has(gateway.message))
  );
}

/**
 * Which gateway refused `api/session`, by its answer; undefined for any other refusal (the
 * dashboard's own, a proxy's page), which the page shows as it is rather than a sign-in it
 * cannot give. A JWT authorizer answers a missing or invalid token 401, and a token the page
 * sent that lacks the route's scopes 403 in API Gateway's `{"message": ...}`, where the token
 * form still fits; a 403 to a page that sent no token is IAM's when it answers as IAM does.
 */
function gatewayRefusal(error: ApiError): 'gateway' | 'sigv4' | undefined {
  if (error.status === 401) return 'gateway';
  if (error.status !== 403) return undefined;
  if (storedAuthorization() !== null) {
    return error.gateway.message !== undefined ? 'gateway' : undefined;
  }
  return isIamRefusal(error) ? 'sigv4' : undefined;
}

export async function loadSession(): Promise<SessionJson> {
  const session = await getJson<SessionJson>('api/session').catch((error: unknown) => {
    const refusedBy = error instanceof ApiError ? gatewayRefusal(error) : undefined;
    if (refusedBy === undefined) throw error;
    return gatewaySignIn(refusedBy);
  });
  // A stored header the server no longer accepts (password changed, server restarted): drop it.
  if (session.user === null && storedAuthorization() !== null) storeAuthorization(null);
  setSession(session);
  return session;
}

/** How to sign in where the page has no form for it (`sigv4`); undefined where it has one. */
export function signInElsewhere(session: SessionJson | null): string | undefined {
  return session !== null && session.signIn.length > 0 && session.signIn.every((k) => k === 'sigv4')
    ? 'Open this dashboard through your SigV4 signing proxy (AWS IAM) to sign in.'
    : undefined;
}

/** Whether any sign-in form fits this dashboard (with only `gateway`, a token form for JWT authorizers). */
function canSignInHere(session: SessionJson | null): boolean {
  return session !== null && session.signIn.some((kind) => kind !== 'sigv4');
}

function field(label: string, input: HTMLInputElement, hint?: string): HTMLElement {
  const id = uniqueId('field');
  input.id = id;
  const hintId = hint === undefined ? undefined : `${id}-hint`;
  if (hintId !== undefined) input.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint === undefined ? null : h('p', { class: 'hint', id: hintId }, hint),
  );
}

/** Opens the sign-in dialog; `reason` says why it is needed (a 401's message). */
export function openSignIn(reason?: string): void {
  const signIn = current?.signIn ?? [];
  const withPassword = signIn.includes('basic');
  const withToken = signIn.includes('bearer') || signIn.includes('gateway');
  const user = h('input', { name: 'user', autocomplete: 'username', autofocus: withPassword });
  const password = h('input', {
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
  });
  const token = h('input', {
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    autofocus: !withPassword,
  });
  const body: Child[] = [
    reason === undefined ? null : h('p', { class: 'notice' }, reason),
    withPassword
      ? h(
          'fieldset',
          null,
          h('legend', null, 'User and password'),
          field('User', user),
          field('Password', password),
        )
      : null,
    withToken
      ? h(
          'fieldset',
          null,
          h('legend', null, withPassword ? 'Or a token' : 'Token'),
          field(
            'Token',
            token,
            signIn.includes('gateway')
              ? "An OIDC token of the API gateway's issuer, when it uses a JWT authorizer."
              : 'A bearer token from the dashboard configuration.',
          ),
        )
      : null,
    h('p', { class: 'hint' }, 'You stay signed in until you sign out or close this tab.'),
  ];
  openDialog({
    title: 'Sign in to Driftless',
    body,
    confirmLabel: 'Sign in',
    onConfirm: async () => {
      let authorization: string;
      if (withPassword && user.value !== '') {
        authorization = basicAuthorization(user.value, password.value);
      } else if (withToken && token.value.trim() !== '') {
        authorization = bearerAuthorization(token.value);
      } else {
        return withPassword ? 'Enter your user and password.' : 'Enter a token.';
      }
      try {
        const session = await getJson<SessionJson>('api/session', { authorization });
        if (session.user === null) return 'The dashboard did not accept these credentials.';
        storeAuthorization(authorization);
        setSession(session);
        return undefined;
      } catch (error) {
        return error instanceof ApiError && error.status === 401
          ? `The dashboard did not accept these credentials: ${error.message}`
          : `Could not sign in: ${messageOf(error)}`;
      }
    },
  });
}

export async function signOut(): Promise<void> {
  storeAuthorization(null);
  await loadSession().catch(() => setSession(current && { ...current, user: null, canAct: false }));
}

/** The header's corner: who is signed in, or the sign-in button. */
export function renderSessionArea(container: HTMLElement): void {
  const session = current;
  if (session === null) {
    replaceContent(container);
    return;
  }
  const signedInHere = storedAuthorization() !== null;
  const elsewhere = signInElsewhere(session);
  replaceContent(
    container,
    session.user === null
      ? canSignInHere(session)
        ? h(
            'button',
            {
              type: 'button',
              class: 'button header-button',
              'data-focus-key': 'sign-in',
              onclick: () => openSignIn(),
            },
            'Sign in',
          )
        : h(
            'span',
            { class: 'header-user' },
            'Not signed in',
            // Under IAM the way in is outside the page: say where, as a form would.
            elsewhere === undefined ? null : [' ', h('span', { class: 'hint' }, elsewhere)],
          )
      : [
          h('span', { class: 'header-user' }, 'Signed in as ', h('strong', null, session.user)),
          // A gateway's sign-in is not ours to end.
          signedInHere
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'button header-button',
                  'data-focus-key': 'sign-out',
                  onclick: () => void signOut(),
                },
                'Sign out',
              )
            : null,
        ],
  );
}

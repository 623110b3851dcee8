/**
 * The dashboard's JSON API, read with URLs relative to the page (so the UI
 * works under any path prefix), with the signed-in user's Authorization
 * header when the UI's own sign-in form set one.
 */
import type { ActionAnswer, DashboardAction, ErrorAnswer } from '../src/dashboard/types.ts';

/** Where the Authorization header value lives: for this browser tab only. */
const AUTHORIZATION_KEY = 'driftless.authorization';

/**
 * What an AWS front (API Gateway) said of a refusal of its own: the error type of its
 * `x-amzn-errortype` header (without the `:<namespace>` some answers append) and the `message`
 * of its JSON body. Empty for the dashboard's own answers (`{"error": ...}`) and other pages.
 */
export interface GatewayAnswer {
  readonly errorType?: string;
  readonly message?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly gateway: GatewayAnswer = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function storedAuthorization(): string | null {
  try {
    return sessionStorage.getItem(AUTHORIZATION_KEY);
  } catch {
    // Storage can be disabled by the browser's privacy settings: then nobody stays signed in.
    return null;
  }
}

export function storeAuthorization(value: string | null): void {
  try {
    if (value === null) sessionStorage.removeItem(AUTHORIZATION_KEY);
    else sessionStorage.setItem(AUTHORIZATION_KEY, value);
  } catch {
    // See storedAuthorization.
  }
}

/** `Basic <base64>` of `user:password`, UTF-8 encoded (btoa alone takes Latin-1 only). */
export function basicAuthorization(user: string, password: string): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

export function bearerAuthorization(token: string): string {
  return `Bearer ${token.trim()}`;
}

/**
 * `api/tracks/<track>/<rest>`. Only the track name is encoded: the rest are
 * fixed words and revision ids, whose chart suffix `+<digest>` the server
 * reads literally in a path.
 */
export function trackPath(track: string, ...rest: string[]): string {
  return ['api/tracks', encodeURIComponent(track), ...rest].join('/');
}

/** The body as JSON, or undefined when it is not JSON (a proxy's or gateway's page). */
function parsedBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function errorMessage(response: Response, body: string): string {
  const parsed = parsedBody(body) as Partial<ErrorAnswer> | null | undefined;
  if (typeof parsed?.error === 'string') return parsed.error;
  const firstLine = body.trim().split('\n')[0]?.slice(0, 200);
  return `${response.status} ${response.statusText}${firstLine ? `: ${firstLine}` : ''}`;
}

function gatewayAnswer(response: Response, body: string): GatewayAnswer {
  const errorType = response.headers.get('x-amzn-errortype')?.split(':')[0]?.trim();
  const parsed = parsedBody(body) as { message?: unknown; error?: unknown } | null | undefined;
  const message =
    typeof parsed?.message === 'string' && parsed.error === undefined ? parsed.message : undefined;
  return {
    ...(errorType ? { errorType } : {}),
    ...(message === undefined ? {} : { message }),
  };
}

async function request(
  path: string,
  init: RequestInit & { authorization?: string | null } = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  const authorization =
    init.authorization === undefined ? storedAuthorization() : init.authorization;
  if (authorization) headers.set('Authorization', authorization);
  let response: Response;
  try {
    response = await fetch(new URL(path, document.baseURI), {
      ...init,
      headers,
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (cause) {
    if (cause instanceof DOMException && cause.name === 'AbortError') throw cause;
    throw new ApiError(0, 'the dashboard could not be reached (network error)');
  }
  if (!response.ok) {
    const body = await response.text().catch(() => '');
    throw new ApiError(
      response.status,
      errorMessage(response, body),
      gatewayAnswer(response, body),
    );
  }
  return response;
}

export async function getJson<T>(
  path: string,
  options: { signal?: AbortSignal; authorization?: string | null } = {},
): Promise<T> {
  const response = await request(path, { ...options, headers: { Accept: 'application/json' } });
  return (await response.json()) as T;
}

export async function getText(path: string, signal?: AbortSignal): Promise<string> {
  const response = await request(path, signal ? { signal } : {});
  return response.text();
}

/** Runs an action; the Content-Type header is what the server's CSRF check asks for. */
export async function postAction(
  track: string,
  action: DashboardAction,
  body: Record<string, unknown> = {},
): Promise<ActionAnswer> {
  const response = await request(trackPath(track, action), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as ActionAnswer;
}

export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

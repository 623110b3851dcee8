/**
 * How long an HTTP exchange with a Git host may stay silent before it fails (an SSH session
 * too: ssh-transport.ts's SessionGuard).
 * Without a timeout of its own, isomorphic-git's Node client inherits the one
 * of Node's global agent (5 s since Node 19): a healthy host that prepares a
 * big pack for longer than that without sending anything (the fetch asks for
 * no progress; Git's own keep-alive comes every 5 s) failed every fetch as
 * "Request timed out". A host that truly hangs still fails, after this long.
 */
import type { HttpClient } from 'isomorphic-git';

/** Well under the fetch function's 120 s timeout, far over any quiet spell of a working host. */
export const GIT_HTTP_IDLE_TIMEOUT_MS = 60_000;

/**
 * `http` for one call: its requests cancelled when `signal` aborts (Node's request `signal`,
 * which isomorphic-git's client passes through).
 */
export function withSignal(http: HttpClient, signal: AbortSignal | undefined): HttpClient {
  if (signal === undefined) return http;
  return { request: (request) => http.request({ ...request, signal }) };
}

/** `http`, with every request failing after `idleMs` without a byte (simple-get's `timeout`). */
export function withIdleTimeout(http: HttpClient, idleMs: number): HttpClient {
  return {
    request: (request) =>
      http.request({
        ...request,
        fetchOptions: { ...(request.fetchOptions as object | undefined), timeout: idleMs },
      }),
  };
}

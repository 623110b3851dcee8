/**
 * The dashboard's HTTP exchange, independent of where it runs: `driftless
 * serve` (Node's http server) and the dashboard function (API Gateway HTTP
 * API events) each turn their request into a {@link DashboardRequest} and
 * write back the {@link DashboardResponse} of `handleDashboard`
 * (dashboard-routes.ts).
 */

/** Who made the request, as the adapter established it. */
export type Identity =
  /** A signed-in person or token holder; `name` goes into history as `by`. */
  | { readonly kind: 'user'; readonly name: string }
  /** Nobody signed in (or the credentials were wrong: `refused` says why). */
  | { readonly kind: 'anonymous'; readonly refused?: string };

export interface DashboardRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The path below the dashboard's root, starting with `/` (`/api/tracks`). */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body as text (JSON for actions); '' when none. */
  readonly body: string;
  /** Who asked: serve checks basic/bearer credentials; AWS takes the authorizer's identity. */
  readonly identity: Identity;
}

export interface DashboardResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Text (JSON, HTML, YAML, JavaScript, CSS). */
  readonly body: string;
}

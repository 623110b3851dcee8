/**
 * The dashboard (docs/dashboard.md) behind API Gateway: `GET /`,
 * `GET /assets/{file}`, `GET|POST /api/{proxy+}`. API Gateway authenticates
 * (IAM or JWT, `dashboard.authorizer`) before this runs, on every route but
 * the page and its assets under JWT and the reads under `readAccess: open`;
 * the caller it established is the request's identity, none on a route
 * without an authorizer (src/aws/dashboard-http.ts). Reads
 * come from the store, actions are queued as jobs (sync to fetch, the others
 * to apply) with the user recorded as `by`. No cluster, Git or secrets here.
 */
import { dashboardRequestOf, dashboardResultOf } from '../src/aws/dashboard-http.ts';
import { dashboardDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { invocationOrigin, withJobOrigin } from '../src/aws/job-origin.ts';
import type { HttpApiEvent, HttpApiResult, LambdaContext } from '../src/aws/lambda-events.ts';
import { handleDashboard, type DashboardDeps } from '../src/dashboard/dashboard-routes.ts';
import type { Logger } from '../src/logger.ts';

/** What a request that failed inside answers: no details (they may name internals). */
const INTERNAL_ERROR: HttpApiResult = {
  statusCode: 500,
  headers: {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  },
  body: `${JSON.stringify({ error: 'internal error; see the function log' })}\n`,
  isBase64Encoded: false,
};

/** The handler over `deps` (tests and the local stage pass their own). */
export function createDashboardHandler(
  deps: () => Promise<DashboardDeps> = () => dashboardDeps(),
  log: Logger = functionLogger('dashboard'),
) {
  return async (event: HttpApiEvent, context?: LambdaContext): Promise<HttpApiResult> => {
    const request = dashboardRequestOf(event);
    const { method, path, identity } = request;
    const by = identity.kind === 'user' ? identity.name : undefined;
    try {
      const ports = await deps();
      // Each request is an action of its own: suspend, resume, suspend all reach apply (job-origin.ts).
      const response = await withJobOrigin(invocationOrigin(context), () =>
        handleDashboard(request, ports),
      );
      // Actions and refusals are worth a line; the page's polls are not.
      if (method === 'POST' || response.status >= 400) {
        log[response.status >= 400 ? 'warn' : 'info']('dashboard request', {
          method,
          path,
          status: response.status,
          by,
        });
      }
      return dashboardResultOf(response, request);
    } catch (error) {
      log.error('dashboard request failed', { method, path, by, error });
      return { ...INTERNAL_ERROR, headers: { ...INTERNAL_ERROR.headers } };
    }
  };
}

export const handler = createDashboardHandler();

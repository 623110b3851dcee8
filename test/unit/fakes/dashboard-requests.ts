/**
 * Requests to the dashboard's routes (handleDashboard) as the page sends them, and routes over a
 * store with a queue that keeps what it is given: for route tests without a browser.
 */
import assert from 'node:assert/strict';
import { handleDashboard, type DashboardDeps } from '../../../src/dashboard/dashboard-routes.ts';
import type { DashboardRequest } from '../../../src/dashboard/http-types.ts';
import { storedObjects } from '../../../src/dashboard/read-model.ts';
import type { Job } from '../../../src/sync/jobs.ts';

/** A read, anonymous (read access is open in {@link dashboardDeps}). */
export function getRequest(path: string): DashboardRequest {
  return {
    method: 'GET',
    path,
    query: new URLSearchParams(),
    headers: { host: 'dash.test' },
    body: '',
    identity: { kind: 'anonymous' },
  };
}

/** An action as the page sends it: signed in, JSON, from this origin. */
export function postRequest(path: string, body: unknown = {}): DashboardRequest {
  return {
    method: 'POST',
    path,
    query: new URLSearchParams(),
    headers: { host: 'dash.test', origin: 'https://dash.test', 'content-type': 'application/json' },
    body: JSON.stringify(body),
    identity: { kind: 'user', name: 'alice' },
  };
}

/**
 * The routes over `store` with `tracks` (and any other deps given), reads open, sign-in by
 * password, no page assets; `queued` holds every job an action queued.
 */
export function dashboardDeps(
  store: DashboardDeps['state'] & DashboardDeps['artifacts'],
  more: Pick<DashboardDeps, 'tracks'> & Partial<DashboardDeps>,
): { deps: DashboardDeps; queued: Job[] } {
  const queued: Job[] = [];
  const deps: DashboardDeps = {
    state: store,
    artifacts: store,
    queue: {
      enqueue: async (job) => {
        queued.push(job);
      },
    },
    objects: async (_track, state) => storedObjects(state),
    readAccess: 'open',
    signIn: ['basic'],
    assets: async () => undefined,
    ...more,
  };
  return { deps, queued };
}

/** The JSON body of the routes' answer to `request`, which must be 200. */
export async function answeredJson(
  deps: DashboardDeps,
  request: DashboardRequest,
): Promise<unknown> {
  const answer = await handleDashboard(request, deps);
  assert.equal(answer.status, 200, answer.body);
  return JSON.parse(answer.body);
}

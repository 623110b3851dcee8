/**
 * API Gateway HTTP API (payload 2.0) in and out for the dashboard function:
 * an event becomes the {@link DashboardRequest} the shared routes answer
 * (src/dashboard/dashboard-routes.ts), and their {@link DashboardResponse}
 * becomes the function's result.
 *
 * Who asks is what the route's authorizer established, and nothing else:
 * API Gateway checked the SigV4 signature (IAM) or the token (JWT) before
 * the function ran and put the caller into `requestContext.authorizer`,
 * which a client cannot set. A route without an authorizer (GET routes
 * under `readAccess: open`, but not `GET /api/session`, which keeps it so
 * that the page learns who may act; the page and its assets under a JWT
 * authorizer) is anonymous, whatever headers it carries, a SigV4 signature
 * too; the `Authorization` header is not even passed on.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { DashboardRequest, DashboardResponse, Identity } from '../dashboard/http-types.ts';
import type { HttpApiAuthorizerContext, HttpApiEvent, HttpApiResult } from './lambda-events.ts';

/** The JWT claims that name a person, in the order they are preferred. */
const NAME_CLAIMS = ['email', 'preferred_username', 'sub'] as const;

/** The kinds of IAM principal whose ARN ends in a readable name (`assumed-role/Ops/alice`). */
const PRINCIPAL_KINDS = ['assumed-role/', 'federated-user/', 'user/'] as const;

/**
 * A readable name for an IAM principal's ARN: `Role/session` for an assumed
 * role (`arn:aws:sts::1:assumed-role/Ops/alice` -> `Ops/alice`), the user's
 * path and name for an IAM user, the resource part otherwise (`root`).
 */
export function principalName(arn: string): string {
  const parts = arn.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return arn;
  const resource = parts.slice(5).join(':');
  for (const kind of PRINCIPAL_KINDS) {
    if (resource.startsWith(kind) && resource.length > kind.length) {
      return resource.slice(kind.length);
    }
  }
  return resource === '' ? arn : resource;
}

/** Who the authorizer says made the request; anonymous without an authorizer. */
export function identityOf(authorizer: HttpApiAuthorizerContext | undefined): Identity {
  const iam = authorizer?.iam;
  if (iam !== undefined && iam !== null) {
    const arn = iam.userArn?.trim();
    if (arn) return { kind: 'user', name: principalName(arn) };
    const id = iam.userId?.trim();
    if (id) return { kind: 'user', name: id };
    return { kind: 'anonymous', refused: 'the IAM authorizer named no principal' };
  }
  const claims = authorizer?.jwt?.claims;
  if (claims !== undefined && claims !== null) {
    for (const claim of NAME_CLAIMS) {
      const value = claims[claim];
      if ((typeof value === 'string' || typeof value === 'number') && String(value).trim()) {
        return { kind: 'user', name: String(value).trim() };
      }
    }
    return {
      kind: 'anonymous',
      refused: `the token has none of the claims ${NAME_CLAIMS.join(', ')}`,
    };
  }
  return { kind: 'anonymous' };
}

/**
 * The path below the dashboard's root: `rawPath` without the stage's prefix
 * (a stage other than `$default` is part of the path API Gateway hands on).
 */
export function dashboardPathOf(event: HttpApiEvent): string {
  const raw = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  const path = raw.startsWith('/') ? raw : `/${raw}`;
  const stage = event.requestContext?.stage;
  if (stage !== undefined && stage !== '' && stage !== '$default') {
    const prefix = `/${stage}`;
    if (path === prefix) return '/';
    if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
  }
  return path;
}

/** Lower-case header names; no `Authorization` (see the module comment); cookies back in `cookie`. */
function headersOf(event: HttpApiEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  delete headers['authorization'];
  if (event.cookies !== undefined && event.cookies.length > 0) {
    headers['cookie'] = event.cookies.join('; ');
  }
  // Actions compare the browser's Origin with the host it asked.
  const domain = event.requestContext?.domainName;
  if (headers['host'] === undefined && domain !== undefined) headers['host'] = domain;
  return headers;
}

/** The request the dashboard's routes answer. */
export function dashboardRequestOf(event: HttpApiEvent): DashboardRequest {
  const body = event.body ?? '';
  return {
    method: (event.requestContext?.http?.method ?? 'GET').toUpperCase(),
    path: dashboardPathOf(event),
    query: new URLSearchParams(event.rawQueryString ?? ''),
    headers: headersOf(event),
    body: event.isBase64Encoded === true ? Buffer.from(body, 'base64').toString('utf8') : body,
    identity: identityOf(event.requestContext?.authorizer),
  };
}

/**
 * The most a Lambda function may return is 6 MB, base64 included; this
 * leaves room for the status and headers around the body.
 */
export const MAX_RESULT_BODY_BYTES = 5_800_000;

/** Answers above this are gzipped when the client takes gzip (every browser does). */
const COMPRESS_ABOVE_BYTES = 256 * 1024;

/**
 * The function's result for the routes' answer (always text: JSON, HTML,
 * YAML, JS, CSS). A large answer — a revision's manifests or a diff of a
 * track of thousands of objects — is gzipped (text shrinks ~10×); one that
 * still cannot be returned is refused naming its size and where to read it
 * instead, rather than failing as Lambda's bare 502.
 */
export function dashboardResultOf(
  response: DashboardResponse,
  request?: Pick<DashboardRequest, 'headers' | 'path'>,
): HttpApiResult {
  const plain: HttpApiResult = {
    statusCode: response.status,
    headers: { ...response.headers },
    body: response.body,
    isBase64Encoded: false,
  };
  const bytes = Buffer.byteLength(response.body, 'utf8');
  if (bytes <= COMPRESS_ABOVE_BYTES) return plain;
  const takesGzip = /\bgzip\b/i.test(request?.headers['accept-encoding'] ?? '');
  if (takesGzip) {
    const body = gzipSync(response.body).toString('base64');
    if (body.length <= MAX_RESULT_BODY_BYTES) {
      return {
        ...plain,
        headers: { ...plain.headers, 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding' },
        body,
        isBase64Encoded: true,
      };
    }
  } else if (Buffer.byteLength(JSON.stringify(response.body), 'utf8') <= MAX_RESULT_BODY_BYTES) {
    // Measured as sent, inside Lambda's JSON result, where newlines and quotes are escaped.
    return plain;
  }
  return {
    statusCode: 413,
    headers: { 'Content-Type': 'application/json; charset=utf-8' },
    body: `${JSON.stringify({
      error: `the answer to ${request?.path ?? 'this request'} is ${(bytes / 1_000_000).toFixed(1)} MB, more than the dashboard function can return (6 MB${takesGzip ? ', gzipped' : ''}); \`driftless serve\` on the same store shows it`,
    })}\n`,
    isBase64Encoded: false,
  };
}

/**
 * The built UI in the deployment package: serverless.yml ships `dist/web/**`
 * with the dashboard function, and the zip unpacks in `LAMBDA_TASK_ROOT`
 * (`/var/task/handlers/dashboard.mjs`, `/var/task/dist/web/index.html`).
 * Found by looking up from this code's own file — the bundle in Lambda,
 * src/aws/ under tsx — and then in the working directory, where
 * serverless-offline runs bundles built in a folder of their own;
 * undefined when the UI is not there (the page then answers 503).
 */
export function packagedWebDir(
  from: string = fileURLToPath(import.meta.url),
  cwd: string = process.cwd(),
): string | undefined {
  const built = (dir: string) => existsSync(join(dir, 'dist', 'web', 'index.html'));
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (built(dir)) return join(dir, 'dist', 'web');
    if (dirname(dir) === dir) break;
  }
  return built(cwd) ? join(cwd, 'dist', 'web') : undefined;
}

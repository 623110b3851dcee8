/**
 * The HTTP surface of `driftless serve`: `POST /webhook/<provider>`,
 * `GET /healthz`, `GET /metrics`, and the dashboard at `/` with its API
 * under `/api/`. Routing and HTTP details only; the work is in the webhook
 * use-case (src/sync/accept-webhook.ts), the metrics and the dashboard's
 * routes (src/dashboard/). Webhook answers carry the same JSON body as the
 * webhook function's.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from '../logger.ts';
import { PROMETHEUS_CONTENT_TYPE } from './prometheus-text.ts';
import { readBody } from './read-body.ts';
import { messageOf } from '../errors.ts';
import type { WebhookRequest } from '../source/webhooks/index.ts';
import type { WebhookAnswer } from '../sync/accept-webhook.ts';
import type { DashboardResponse } from '../dashboard/http-types.ts';
import type { ServeDashboardRequest } from './serve-dashboard.ts';

export interface HttpRoutesDeps {
  /** The webhook use-case over serve's ports. */
  readonly acceptWebhook: (provider: string, request: WebhookRequest) => Promise<WebhookAnswer>;
  /** Whether `POST /webhook/<provider>` is configured here; its body is read only then. */
  readonly webhookConfigured: (provider: string) => boolean;
  /** Largest webhook body read, in bytes. */
  readonly maxBodyBytes: number;
  /** Whether jobs are still taken (false while shutting down): /healthz says so. */
  readonly accepting: () => boolean;
  /** The exposition document for a scrape. */
  readonly metrics: () => Promise<string>;
  /** The dashboard's routes (serve-dashboard.ts). */
  readonly dashboard: (request: ServeDashboardRequest) => Promise<DashboardResponse>;
  /** Told the status of each webhook answer, for the deliveries counter. */
  readonly onWebhookAnswer: (provider: string, status: number) => void;
  readonly logger: Logger;
}

const WEBHOOK_PATH = /^\/webhook\/([^/]+)\/?$/;

/** The dashboard's paths: its page, its built files and its API. */
const DASHBOARD_PATH = /^\/(?:index\.html|assets\/.*|api\/.*)?$/;

/** Largest action body read: `{"revision": "<sha>"}` is far smaller. */
const MAX_ACTION_BYTES = 16 * 1024;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Node gives repeated headers as arrays; the receivers expect one string per name. */
function flatHeaders(request: IncomingMessage): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

async function webhook(
  provider: string,
  req: IncomingMessage,
  deps: HttpRoutesDeps,
): Promise<WebhookAnswer> {
  if (!deps.webhookConfigured(provider)) {
    // 404 before the size check, as for a small body (docs/cli.md, Webhooks): the body is
    // drained unread, and the use-case, which looks at the host before anything else, answers.
    req.resume();
    return deps.acceptWebhook(provider, { headers: {}, body: '', isBase64Encoded: true });
  }
  const body = await readBody(req, deps.maxBodyBytes);
  if (body.tooLarge) {
    const reason = `payload is larger than ${deps.maxBodyBytes} bytes`;
    return { status: 413, body: { kind: 'rejected', reason } };
  }
  // Base64 carries the bytes through unchanged: a UTF-8 round trip would alter invalid sequences
  // and break the signature check.
  return deps.acceptWebhook(provider, {
    headers: flatHeaders(req),
    body: body.bytes.toString('base64'),
    isBase64Encoded: true,
  });
}

async function dashboard(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  deps: HttpRoutesDeps,
): Promise<void> {
  const method = req.method ?? 'GET';
  let body = '';
  if (method === 'POST') {
    const read = await readBody(req, MAX_ACTION_BYTES);
    if (read.tooLarge) {
      res.setHeader('Connection', 'close');
      sendJson(res, 413, { error: `the body is larger than ${MAX_ACTION_BYTES} bytes` });
      return;
    }
    body = read.bytes.toString('utf8');
  } else {
    req.resume();
  }
  const answer = await deps.dashboard({
    method,
    path,
    query: new URL(req.url ?? '/', 'http://localhost').searchParams,
    headers: flatHeaders(req),
    body,
  });
  if (method === 'POST' && answer.status < 500) {
    deps.logger[answer.status >= 400 ? 'warn' : 'info']('dashboard action', {
      path,
      status: answer.status,
      ...(answer.status === 202 ? (JSON.parse(answer.body) as object) : { body: answer.body }),
    });
  }
  res.writeHead(answer.status, {
    ...answer.headers,
    'Content-Length': Buffer.byteLength(answer.body),
  });
  res.end(method === 'HEAD' ? undefined : answer.body);
}

/** The request listener of the server. */
export function httpRoutes(deps: HttpRoutesDeps): RequestListener {
  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const hook = WEBHOOK_PATH.exec(path);
    if (hook) {
      if (req.method !== 'POST') {
        res.setHeader('Allow', 'POST');
        sendJson(res, 405, { kind: 'rejected', reason: 'webhooks are delivered with POST' });
        req.resume();
        return;
      }
      // Undecodable (`%zz`) names no provider; handleWebhook answers 404 for it.
      const provider = safeDecode(hook[1]!);
      const answer = await webhook(provider, req, deps);
      deps.onWebhookAnswer(provider, answer.status);
      deps.logger[answer.status >= 400 ? 'warn' : 'info']('webhook delivery', {
        provider,
        status: answer.status,
        ...answer.body,
      });
      if (answer.status === 413) res.setHeader('Connection', 'close');
      sendJson(res, answer.status, answer.body);
      return;
    }
    if (DASHBOARD_PATH.test(path)) {
      await dashboard(req, res, path, deps);
      return;
    }
    req.resume();
    if (path === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      const healthy = deps.accepting();
      sendText(
        res,
        healthy ? 200 : 503,
        'text/plain; charset=utf-8',
        healthy ? 'ok\n' : 'shutting down\n',
      );
      return;
    }
    if (path === '/metrics' && req.method === 'GET') {
      sendText(res, 200, PROMETHEUS_CONTENT_TYPE, await deps.metrics());
      return;
    }
    sendJson(res, 404, { error: `no route for ${req.method ?? 'GET'} ${path}` });
  };

  return (req, res) => {
    route(req, res).catch((error: unknown) => {
      // A store or bug failure: 500 makes a Git host retry the delivery later.
      deps.logger.error('request failed', {
        method: req.method,
        path: new URL(req.url ?? '/', 'http://localhost').pathname,
        error: messageOf(error),
      });
      if (!res.headersSent) sendJson(res, 500, { kind: 'error', reason: 'internal error' });
      else res.destroy();
    });
  };
}

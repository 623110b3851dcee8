/**
 * POST /webhook/{provider} (API Gateway HTTP API): the webhook use-case
 * (src/sync/accept-webhook.ts) — verify, skip a delivery seen before, queue
 * a fetch job per matching track, record the delivery id — answered at once
 * with its JSON body.
 * A bad signature is 401 and nothing else happens. Every answer is counted
 * (`driftless_webhook_deliveries_total`), and the jobs queued carry the
 * delivery's arrival, for time-to-deploy (src/aws/webhook-arrival.ts).
 */
import { webhookDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { functionMetrics, type FunctionMetrics } from '../src/aws/function-metrics.ts';
import { jsonResult, providerOf, webhookRequestOf } from '../src/aws/http-api.ts';
import type { HttpApiEvent, HttpApiResult } from '../src/aws/lambda-events.ts';
import { withWebhookArrival } from '../src/aws/webhook-arrival.ts';
import type { Logger } from '../src/logger.ts';
import { acceptWebhook, type AcceptWebhookDeps } from '../src/sync/accept-webhook.ts';

/** The handler over `deps` (tests and the local stage pass their own). */
export function createWebhookHandler(
  deps: () => Promise<AcceptWebhookDeps> = () => webhookDeps(),
  log: Logger = functionLogger('webhook'),
  metrics: FunctionMetrics = functionMetrics(log),
  now: () => number = Date.now,
) {
  const answer = async (event: HttpApiEvent, provider: string): Promise<HttpApiResult> => {
    try {
      const receivedAt = now();
      const ports = await deps();
      const { status, body } = await withWebhookArrival(receivedAt, () =>
        acceptWebhook(provider, webhookRequestOf(event), ports),
      );
      log[status >= 400 ? 'warn' : 'info']('webhook delivery', { provider, status, ...body });
      return jsonResult(status, body);
    } catch (error) {
      // Config, secret or queue trouble: the host retries a 5xx, and the details stay in the log.
      log.error('webhook delivery failed', { provider, error });
      return jsonResult(500, { kind: 'error', reason: 'internal error; see the function log' });
    }
  };
  return async (event: HttpApiEvent): Promise<HttpApiResult> => {
    const provider = providerOf(event);
    const result = await answer(event, provider);
    metrics.countWebhook(provider, result.statusCode);
    return result;
  };
}

export const handler = createWebhookHandler();

/**
 * POST /webhook/{provider} (API Gateway HTTP API): the webhook use-case
 * (src/sync/accept-webhook.ts) — verify, record the delivery id, queue a
 * fetch job per matching track — answered at once with its JSON body.
 * A bad signature is 401 and nothing else happens.
 */
import { webhookDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { jsonResult, providerOf, webhookRequestOf } from '../src/aws/http-api.ts';
import type { HttpApiEvent, HttpApiResult } from '../src/aws/lambda-events.ts';
import type { Logger } from '../src/logger.ts';
import { acceptWebhook, type AcceptWebhookDeps } from '../src/sync/accept-webhook.ts';

/** The handler over `deps` (tests and the local stage pass their own). */
export function createWebhookHandler(
  deps: () => Promise<AcceptWebhookDeps> = () => webhookDeps(),
  log: Logger = functionLogger('webhook'),
) {
  return async (event: HttpApiEvent): Promise<HttpApiResult> => {
    const provider = providerOf(event);
    try {
      const { status, body } = await acceptWebhook(provider, webhookRequestOf(event), await deps());
      log[status >= 400 ? 'warn' : 'info']('webhook delivery', { provider, status, ...body });
      return jsonResult(status, body);
    } catch (error) {
      // Config, secret or queue trouble: the host retries a 5xx, and the details stay in the log.
      log.error('webhook delivery failed', { provider, error });
      return jsonResult(500, { kind: 'error', reason: 'internal error; see the function log' });
    }
  };
}

export const handler = createWebhookHandler();

/**
 * POST /webhook/{provider} (API Gateway HTTP API): verify the delivery,
 * record its id, queue a fetch job per matching track, answer 202 at once.
 * A bad signature is 401 and nothing else happens.
 */
import { acceptWebhook, type AcceptWebhookDeps } from '../src/aws/accept-webhook.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { jsonResult, providerOf, webhookRequestOf } from '../src/aws/http-api.ts';
import type { HttpApiEvent, HttpApiResult } from '../src/aws/lambda-events.ts';
import { webhookDeps } from '../src/aws/webhook-deps.ts';
import type { Logger } from '../src/logger.ts';

/** The handler over `deps` (tests pass fakes). */
export function createWebhookHandler(
  deps: () => Promise<AcceptWebhookDeps> = () => webhookDeps(),
  log: Logger = functionLogger('webhook'),
) {
  return async (event: HttpApiEvent): Promise<HttpApiResult> => {
    const provider = providerOf(event);
    try {
      const { status, ...answer } = await acceptWebhook(
        provider,
        webhookRequestOf(event),
        await deps(),
      );
      log[status >= 400 ? 'warn' : 'info']('webhook delivery', { provider, status, ...answer });
      return jsonResult(status, answer);
    } catch (error) {
      // Config, secret or queue trouble: the host retries a 5xx, and the details stay in the log.
      log.error('webhook delivery failed', { provider, error });
      return jsonResult(500, { kind: 'error', reason: 'internal error; see the function log' });
    }
  };
}

export const handler = createWebhookHandler();

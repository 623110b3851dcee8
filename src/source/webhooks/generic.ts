/**
 * The generic receiver, for CI jobs and hosts without a dialect of their own:
 *
 * ```
 * POST /webhooks/generic
 * Content-Type: application/json
 * X-Driftless-Signature: sha256=<hex HMAC-SHA256 of the body>
 * X-Driftless-Event: push            (optional; `ping` answers 200)
 * X-Driftless-Delivery: <id>          (optional; de-duplication key)
 *
 * {"repository": "https://git.example.com/org/repo.git",
 *  "ref": "refs/heads/main", "after": "<40-hex sha>", "before": "<sha>"}
 * ```
 *
 * `ref` must be a full ref name: the sender knows which it pushed, and a short
 * name could be a branch or a tag.
 */
import { optionalString, parsePayload, requiredString } from './payload.ts';
import { pushDelivery } from './push-delivery.ts';
import { verifyHexHmac } from './signature.ts';
import { WebhookPayloadError } from './errors.ts';
import type { HostReceiver } from './types.ts';
import { isFullCommitId } from '../../object-id.ts';

export const genericReceiver: HostReceiver = {
  deliveryHeaders: ['x-driftless-delivery'],

  async verify(headers, body, secrets) {
    verifyHexHmac(
      'X-Driftless-Signature',
      headers['x-driftless-signature'],
      body,
      secrets,
      'sha256=',
    );
  },

  parse({ headers, text, deliveryId }) {
    const event = headers['x-driftless-event'] ?? 'push';
    if (event === 'ping') return { kind: 'ping', reason: 'ping' };
    if (event !== 'push') return { kind: 'ignored', reason: `event "${event}" is not a push` };
    const payload = parsePayload(text, undefined);
    const repository = requiredString(payload, 'repository');
    const ref = requiredString(payload, 'ref');
    if (!ref.startsWith('refs/')) {
      throw new WebhookPayloadError(
        `ref "${ref}" is not a full ref name (refs/heads/... or refs/tags/...)`,
      );
    }
    const after = requiredString(payload, 'after');
    if (!isFullCommitId(after.toLowerCase()))
      throw new WebhookPayloadError(`after "${after}" is not a full commit sha`);
    return pushDelivery([
      {
        host: 'generic',
        deliveryId,
        repositoryUrls: [repository],
        ref,
        after: after.toLowerCase(),
        before: optionalString(payload, 'before'),
      },
    ]);
  },
};

/**
 * Gitea and Forgejo: `X-Gitea-Signature` (Forgejo also `X-Forgejo-Signature`),
 * the bare hex HMAC-SHA256 of the body; a GitHub-like push payload.
 */
import { parsePayload, optionalString, repositoryUrls, requiredString } from './payload.ts';
import { pushDelivery } from './push-delivery.ts';
import { verifyHexHmac } from './signature.ts';
import { WebhookPayloadError } from './errors.ts';
import type { HostReceiver } from './types.ts';

export const giteaReceiver: HostReceiver = {
  deliveryHeaders: ['x-gitea-delivery', 'x-forgejo-delivery', 'x-gogs-delivery'],

  async verify(headers, body, secrets) {
    const received = headers['x-gitea-signature'] ?? headers['x-forgejo-signature'];
    verifyHexHmac('X-Gitea-Signature', received, body, secrets);
  },

  parse({ headers, text, deliveryId }) {
    const event = headers['x-gitea-event'] ?? headers['x-forgejo-event'] ?? headers['x-gogs-event'];
    if (event === undefined || event === '') {
      throw new WebhookPayloadError('missing X-Gitea-Event header');
    }
    // Gitea has no ping: its "Test Delivery" sends a push of the default branch's head, which
    // goes through as a push (fetching re-resolves the ref, so it changes nothing by itself).
    if (event !== 'push')
      return { kind: 'ignored', reason: `Gitea event "${event}" is not a push` };
    const payload = parsePayload(text, headers['content-type']);
    return pushDelivery([
      {
        host: 'gitea',
        deliveryId,
        repositoryUrls: repositoryUrls(payload, [
          'repository.clone_url',
          'repository.ssh_url',
          'repository.html_url',
        ]),
        ref: requiredString(payload, 'ref'),
        after: requiredString(payload, 'after'),
        before: optionalString(payload, 'before'),
        defaultBranch: optionalString(payload, 'repository.default_branch'),
      },
    ]);
  },
};

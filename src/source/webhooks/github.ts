/**
 * GitHub: `X-Hub-Signature-256` verified by `@octokit/webhooks` (the
 * reference implementation of GitHub's scheme), `X-GitHub-Event`,
 * `X-GitHub-Delivery`.
 */
import { Webhooks } from '@octokit/webhooks';
import { parsePayload, optionalString, repositoryUrls, requiredString } from './payload.ts';
import { pushDelivery } from './push-delivery.ts';
import { requireSignature, signatureMismatch } from './signature.ts';
import { WebhookPayloadError } from './errors.ts';
import type { HostReceiver } from './types.ts';

const SIGNATURE_HEADER = 'X-Hub-Signature-256';

export const githubReceiver: HostReceiver = {
  deliveryHeaders: ['x-github-delivery'],

  async verify(headers, body, secrets) {
    const signature = requireSignature(SIGNATURE_HEADER, headers['x-hub-signature-256'], secrets);
    // The payload that is later parsed is this same decoding, so what is verified is what is read.
    const payload = body.toString('utf8');
    let matched = false;
    // `Webhooks.verify` checks one secret; rotation means trying each (all of them, so the
    // time taken does not tell which one matched).
    for (const secret of secrets) {
      if (await verifyWith(secret, payload, signature)) matched = true;
    }
    if (!matched) throw signatureMismatch(SIGNATURE_HEADER);
  },

  parse({ headers, text, deliveryId }) {
    const event = headers['x-github-event'];
    if (event === undefined || event === '') {
      throw new WebhookPayloadError('missing X-GitHub-Event header');
    }
    if (event === 'ping') return { kind: 'ping', reason: 'GitHub ping' };
    // `create` also fires for new branches and tags, but always alongside a `push`.
    if (event !== 'push')
      return { kind: 'ignored', reason: `GitHub event "${event}" is not a push` };
    const payload = parsePayload(text, headers['content-type']);
    return pushDelivery([
      {
        host: 'github',
        deliveryId,
        repositoryUrls: repositoryUrls(payload, [
          'repository.clone_url',
          'repository.ssh_url',
          'repository.html_url',
          'repository.git_url',
        ]),
        ref: requiredString(payload, 'ref'),
        after: requiredString(payload, 'after'),
        before: optionalString(payload, 'before'),
        defaultBranch: optionalString(payload, 'repository.default_branch'),
      },
    ]);
  },
};

async function verifyWith(secret: string, payload: string, signature: string): Promise<boolean> {
  try {
    return await new Webhooks({ secret }).verify(payload, signature);
  } catch {
    // It throws a TypeError for an empty payload: nothing that could be signed.
    return false;
  }
}

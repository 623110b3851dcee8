/**
 * GitLab: the secret travels as is in `X-Gitlab-Token` (GitLab does not sign
 * bodies), compared in constant time; `X-Gitlab-Event` names the hook.
 */
import { parsePayload, optionalString, repositoryUrls, requiredString } from './payload.ts';
import { pushDelivery } from './push-delivery.ts';
import { constantTimeEqual, requireSignature } from './signature.ts';
import { WebhookPayloadError, WebhookSignatureError } from './errors.ts';
import type { HostReceiver } from './types.ts';

const PUSH_HOOKS = new Set(['Push Hook', 'Tag Push Hook']);
const PUSH_KINDS = new Set(['push', 'tag_push']);

export const gitlabReceiver: HostReceiver = {
  // Idempotency-Key (GitLab 17.4+) is the one documented as stable across retries.
  deliveryHeaders: ['idempotency-key', 'x-gitlab-event-uuid'],

  async verify(headers, _body, secrets) {
    const token = requireSignature('X-Gitlab-Token', headers['x-gitlab-token'], secrets);
    let matched = false;
    for (const secret of secrets) {
      if (constantTimeEqual(token, secret)) matched = true;
    }
    if (!matched) {
      throw new WebhookSignatureError('X-Gitlab-Token does not match any configured secret');
    }
  },

  parse({ headers, text, deliveryId }) {
    const hook = headers['x-gitlab-event'];
    if (hook === undefined || hook === '') {
      throw new WebhookPayloadError('missing X-Gitlab-Event header');
    }
    // GitLab has no ping: "Test" sends a sample push, which goes through as a push.
    // System hooks carry every kind of event under one header; the body names it.
    if (!PUSH_HOOKS.has(hook) && hook !== 'System Hook') {
      return { kind: 'ignored', reason: `GitLab event "${hook}" is not a push` };
    }
    const payload = parsePayload(text, headers['content-type']);
    const kind = optionalString(payload, 'object_kind') ?? optionalString(payload, 'event_name');
    if (kind === undefined || !PUSH_KINDS.has(kind)) {
      return { kind: 'ignored', reason: `GitLab ${hook} of kind "${kind ?? '?'}" is not a push` };
    }
    return pushDelivery([
      {
        host: 'gitlab',
        deliveryId,
        repositoryUrls: repositoryUrls(payload, [
          'project.git_http_url',
          'project.git_ssh_url',
          'project.web_url',
          'repository.git_http_url',
          'repository.git_ssh_url',
          'repository.homepage',
        ]),
        ref: requiredString(payload, 'ref'),
        after: requiredString(payload, 'after'),
        before: optionalString(payload, 'before'),
        defaultBranch: optionalString(payload, 'project.default_branch'),
      },
    ]);
  },
};

/**
 * Bitbucket: `X-Hub-Signature: sha256=<hex>` (not GitHub's SHA-1 header of
 * the same name), `X-Event-Key`. Bitbucket Cloud sends `repo:push`; Bitbucket
 * Data Center sends `repo:refs_changed` and, from its "Test connection"
 * button, `diagnostics:ping`. One push may update several refs.
 */
import {
  isObject,
  optionalString,
  parsePayload,
  repositoryUrls,
  valueAt,
  type JsonObject,
} from './payload.ts';
import { pushDelivery } from './push-delivery.ts';
import { verifyHexHmac } from './signature.ts';
import { WebhookPayloadError } from './errors.ts';
import type { HostReceiver, PushEvent } from './types.ts';

const ZERO_SHA = '0'.repeat(40);

export const bitbucketReceiver: HostReceiver = {
  // X-Request-UUID on Cloud, X-Request-Id on Data Center. (X-Hook-UUID names the hook, not the delivery.)
  deliveryHeaders: ['x-request-uuid', 'x-request-id'],

  async verify(headers, body, secrets) {
    verifyHexHmac('X-Hub-Signature', headers['x-hub-signature'], body, secrets, 'sha256=');
  },

  parse({ headers, text, deliveryId }) {
    const event = headers['x-event-key'];
    if (event === undefined || event === '') {
      throw new WebhookPayloadError('missing X-Event-Key header');
    }
    if (event === 'diagnostics:ping') return { kind: 'ping', reason: 'Bitbucket ping' };
    if (event !== 'repo:push' && event !== 'repo:refs_changed') {
      return { kind: 'ignored', reason: `Bitbucket event "${event}" is not a push` };
    }
    const payload = parsePayload(text, headers['content-type']);
    const cloud = event === 'repo:push';
    const urls = cloud ? cloudUrls(payload) : serverUrls(payload);
    const changes = cloud ? cloudChanges(payload) : serverChanges(payload);
    return pushDelivery(
      changes.map((change) => ({ host: 'bitbucket', deliveryId, repositoryUrls: urls, ...change })),
    );
  },
};

type Change = Pick<PushEvent, 'ref' | 'after' | 'before'>;

/** `push.changes[]` of Bitbucket Cloud: `new`/`old` are `{type, name, target: {hash}}` or null. */
function cloudChanges(payload: JsonObject): Change[] {
  return changesOf(payload, 'push.changes').flatMap((change): Change[] => {
    const next = isObject(change.new) ? change.new : undefined;
    const old = isObject(change.old) ? change.old : undefined;
    // A deleted ref has no `new`; report it as a deletion so the reason says so.
    const side = next ?? old;
    if (side === undefined) return [];
    const name = optionalString(side, 'name');
    const type = optionalString(side, 'type');
    if (name === undefined) throw new WebhookPayloadError('push change has no name');
    const prefix =
      type === 'tag'
        ? 'refs/tags/'
        : type === 'branch' || type === 'named_branch'
          ? 'refs/heads/'
          : undefined;
    // Mercurial bookmarks and unknown kinds: nothing a Git track follows.
    if (prefix === undefined) return [];
    return [
      {
        ref: `${prefix}${name}`,
        after:
          next === undefined ? ZERO_SHA : (optionalString(next, 'target.hash') ?? missingHash()),
        before: old === undefined ? undefined : optionalString(old, 'target.hash'),
      },
    ];
  });
}

/** `changes[]` of Bitbucket Data Center: `{ref: {id}, fromHash, toHash, type: ADD|UPDATE|DELETE}`. */
function serverChanges(payload: JsonObject): Change[] {
  return changesOf(payload, 'changes').map((change) => {
    const ref = optionalString(change, 'ref.id') ?? optionalString(change, 'refId');
    if (ref === undefined) throw new WebhookPayloadError('change has no ref.id');
    const deleted = optionalString(change, 'type') === 'DELETE';
    return {
      ref,
      after: deleted ? ZERO_SHA : (optionalString(change, 'toHash') ?? missingHash()),
      before: optionalString(change, 'fromHash'),
    };
  });
}

function changesOf(payload: JsonObject, path: string): JsonObject[] {
  const changes = valueAt(payload, path);
  if (!Array.isArray(changes)) throw new WebhookPayloadError(`payload has no array ${path}`);
  return changes.filter(isObject);
}

function cloudUrls(payload: JsonObject): string[] {
  return repositoryUrls(payload, ['repository.links.html.href']);
}

/** Data Center lists clone URLs (`http`, `ssh`) in `repository.links.clone[]`. */
function serverUrls(payload: JsonObject): string[] {
  const links = valueAt(payload, 'repository.links.clone');
  const hrefs = (Array.isArray(links) ? links : []).flatMap((link: unknown) =>
    isObject(link) ? (optionalString(link, 'href') ?? []) : [],
  );
  if (hrefs.length === 0) {
    throw new WebhookPayloadError('payload names no repository URL (repository.links.clone)');
  }
  return [...new Set(hrefs)];
}

function missingHash(): never {
  throw new WebhookPayloadError('push change has no target commit hash');
}

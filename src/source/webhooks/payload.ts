/**
 * Reading verified payloads: JSON (or GitHub/Gitea's form encoding of it)
 * into plain objects, and typed reads of nested fields whose failures say
 * which field is wrong.
 */
import { WebhookPayloadError } from './errors.ts';
import { jsonSyntaxProblem } from './json-syntax.ts';

export type JsonObject = Readonly<Record<string, unknown>>;

/**
 * The payload object of a verified body. GitHub and Gitea can be set to send
 * `application/x-www-form-urlencoded` with the JSON in a `payload` field; the
 * signature then covers the form, which was verified as is.
 */
export function parsePayload(text: string, contentType: string | undefined): JsonObject {
  let json = text;
  let what = 'body';
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded') === true) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) throw new WebhookPayloadError('form-encoded body has no payload field');
    json = payload;
    what = 'the payload field';
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    // Where, not what: the reason is answered and logged, and must not quote the delivery (nor
    // carry JSON.parse's error as its cause, whose message does).
    throw new WebhookPayloadError(`${what} is not valid JSON: ${jsonSyntaxProblem(json, error)}`);
  }
  if (!isObject(value)) throw new WebhookPayloadError('body is not a JSON object');
  return value;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at `path` (`repository.clone_url`), or undefined when any step is missing. */
export function valueAt(object: JsonObject, path: string): unknown {
  let value: unknown = object;
  for (const key of path.split('.')) {
    if (!isObject(value)) return undefined;
    value = value[key];
  }
  return value;
}

/** The non-empty string at `path`, or undefined. */
export function optionalString(object: JsonObject, path: string): string | undefined {
  const value = valueAt(object, path);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The non-empty string at `path`, or `WebhookPayloadError` naming the field. */
export function requiredString(object: JsonObject, path: string): string {
  const value = optionalString(object, path);
  if (value === undefined) throw new WebhookPayloadError(`payload has no string field ${path}`);
  return value;
}

/** The distinct non-empty strings found at `paths`, in order; at least one, else an error. */
export function repositoryUrls(object: JsonObject, paths: readonly string[]): string[] {
  const urls = [...new Set(paths.flatMap((path) => optionalString(object, path) ?? []))];
  if (urls.length === 0) {
    throw new WebhookPayloadError(
      `payload names no repository URL (looked at ${paths.join(', ')})`,
    );
  }
  return urls;
}

/** An all-zero object id: the ref was deleted (or, as `before`, created). */
export function isZeroSha(sha: string): boolean {
  return /^0+$/.test(sha);
}

/** Why a push of `ref` to `after` is ignored, or undefined when it is a push to deploy. */
export function ignoredPushReason(ref: string, after: string): string | undefined {
  if (isZeroSha(after)) {
    return `${ref.startsWith('refs/tags/') ? 'tag' : 'branch'} deletion of ${ref}`;
  }
  if (!ref.startsWith('refs/heads/') && !ref.startsWith('refs/tags/')) {
    // refs/merge-requests/..., refs/pull/..., notes: nothing a track follows.
    return `push to ${ref}, neither a branch nor a tag`;
  }
  return undefined;
}

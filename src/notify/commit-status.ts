/**
 * Commit statuses `driftless/<track>` on the track's Git host (DESIGN.md
 * "Notifications and metrics"): `pending` when a revision is fetched (and
 * when it is not applied, the track pinned at another one or a newer commit
 * applied instead, saying so), `success` once it
 * is applied and healthy (applied, for a track that does not wait for
 * health), `failure` with the first error otherwise. Each host
 * has its own API; this module only builds the request, deliver.ts sends it.
 */
import { gitHostRepository, providerOfHost } from '../config/git-host.ts';
import type { CommitStatusProvider, CommitStatusReceiver, Track } from '../config/types.ts';
import { commitOf } from '../object-id.ts';
import type { NotificationEvent } from './events.ts';

export type CommitState = 'pending' | 'success' | 'failure';

export interface CommitStatus {
  readonly sha: string;
  readonly state: CommitState;
  readonly description: string;
}

/** A request to send as it is. */
export interface HttpRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The results of a `fetched` event whose revision is not applied (job-events.ts). */
const NOT_APPLIED: ReadonlySet<string> = new Set(['pinned', 'superseded']);

/** GitHub's limit on a status description; the others allow more. */
const MAX_DESCRIPTION = 140;
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The status `event` sets on its commit, or undefined when it sets none. */
export function commitStatusOf(
  event: NotificationEvent,
  track: Pick<Track, 'wait'>,
): CommitStatus | undefined {
  const sha = event.revision === null ? '' : commitOf(event.revision);
  // A failed fetch may have no commit; a bucket or OCI revision is no commit on a Git host.
  if (!FULL_SHA.test(sha)) return undefined;
  const status = (state: CommitState, description: string): CommitStatus => ({
    sha,
    state,
    description: shorten(description),
  });
  switch (event.event) {
    case 'fetched':
      // Result `pinned` or `superseded`: fetched, but the track's pin or a newer commit keeps it
      // from being applied (job-events.ts); the message says which.
      return status('pending', NOT_APPLIED.has(event.result) ? event.message : 'fetched; applying');
    case 'healthy':
      return status('success', 'applied and healthy');
    case 'applied':
    case 'rolledBack':
      // Without a health wait, applied is the end of the deploy.
      return track.wait ? undefined : status('success', 'applied');
    case 'failed':
    case 'degraded':
      return status('failure', event.message);
    default:
      return undefined;
  }
}

function shorten(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= MAX_DESCRIPTION ? line : `${line.slice(0, MAX_DESCRIPTION - 1)}…`;
}

/** Why no status can be posted for a track: said in the delivery failure, never thrown. */
export class CommitStatusTargetError extends Error {}

interface Target {
  readonly provider: CommitStatusProvider;
  readonly apiUrl: string;
  /** The repository's path on the host, without the API's base path. */
  readonly path: string;
}

/** Where the receiver posts statuses for `track`'s repository. */
export function commitStatusTarget(
  receiver: Pick<CommitStatusReceiver, 'provider' | 'apiUrl'>,
  track: Pick<Track, 'name' | 'repository' | 'bucket'>,
): Target {
  const repository = track.bucket === undefined ? gitHostRepository(track.repository) : undefined;
  if (repository === undefined) {
    throw new CommitStatusTargetError(
      `track "${track.name}": its repository is not on a Git host, so it has no commit statuses`,
    );
  }
  const provider = receiver.provider ?? providerOfHost(repository.host);
  if (provider === undefined) {
    throw new CommitStatusTargetError(
      `track "${track.name}": cannot tell which kind of Git host ${repository.host} is; set provider`,
    );
  }
  const apiUrl = (receiver.apiUrl ?? defaultApiUrl(provider, repository.origin)).replace(
    /\/+$/,
    '',
  );
  // A host installed under a sub-path (https://host/git/) serves repositories under it too.
  const base = new URL(apiUrl).pathname.replace(/\/api(\/v\d+)?\/?$/, '').replace(/\/+$/, '');
  const path =
    base !== '' && repository.path.startsWith(`${base.slice(1)}/`)
      ? repository.path.slice(base.length)
      : repository.path;
  const segments = path.split('/');
  if (provider === 'gitlab' ? segments.length < 2 : segments.length !== 2) {
    throw new CommitStatusTargetError(
      `track "${track.name}": "${path}" is not an owner/repository path on ${provider}`,
    );
  }
  return { provider, apiUrl, path };
}

function defaultApiUrl(provider: CommitStatusProvider, origin: string): string {
  switch (provider) {
    case 'github':
      return origin === 'https://github.com' ? 'https://api.github.com' : `${origin}/api/v3`;
    case 'gitlab':
      return `${origin}/api/v4`;
    case 'gitea':
      return `${origin}/api/v1`;
    case 'bitbucket':
      return 'https://api.bitbucket.org/2.0';
  }
}

/** The request that sets `status` on the commit, in the host's own API. */
export function commitStatusRequest(
  target: Target,
  track: Pick<Track, 'name' | 'repository'>,
  status: CommitStatus,
  token: string,
  dashboardUrl?: string,
): HttpRequest {
  const context = `driftless/${track.name}`;
  const link =
    dashboardUrl === undefined
      ? undefined
      : `${dashboardUrl.replace(/\/+$/, '')}/#/tracks/${encodeURIComponent(track.name)}`;
  const json = { 'content-type': 'application/json', 'user-agent': 'driftless' };
  const [owner, repo] = target.path.split('/') as [string, string];
  const repoPath = `${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  switch (target.provider) {
    case 'github':
      return {
        url: `${target.apiUrl}/repos/${repoPath}/statuses/${status.sha}`,
        headers: {
          ...json,
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${token}`,
          'x-github-api-version': '2022-11-28',
        },
        body: JSON.stringify({
          state: status.state,
          context,
          description: status.description,
          ...(link === undefined ? {} : { target_url: link }),
        }),
      };
    case 'gitea':
      return {
        url: `${target.apiUrl}/repos/${repoPath}/statuses/${status.sha}`,
        headers: { ...json, authorization: `token ${token}` },
        body: JSON.stringify({
          state: status.state,
          context,
          description: status.description,
          ...(link === undefined ? {} : { target_url: link }),
        }),
      };
    case 'gitlab':
      return {
        url: `${target.apiUrl}/projects/${encodeURIComponent(target.path)}/statuses/${status.sha}`,
        headers: { ...json, 'private-token': token },
        body: JSON.stringify({
          state: status.state === 'failure' ? 'failed' : status.state,
          name: context,
          description: status.description,
          ...(link === undefined ? {} : { target_url: link }),
        }),
      };
    case 'bitbucket':
      return {
        url: `${target.apiUrl}/repositories/${repoPath}/commit/${status.sha}/statuses/build`,
        headers: {
          ...json,
          // An app password is `user:password` (Basic); an access token is a Bearer token.
          authorization: token.includes(':')
            ? `Basic ${Buffer.from(token).toString('base64')}`
            : `Bearer ${token}`,
        },
        body: JSON.stringify({
          key: context,
          name: context,
          state: BITBUCKET_STATES[status.state],
          description: status.description,
          // Bitbucket requires a link: the dashboard, else the repository itself.
          url: link ?? webUrlOf(track.repository),
        }),
      };
  }
}

const BITBUCKET_STATES: Readonly<Record<CommitState, string>> = {
  pending: 'INPROGRESS',
  success: 'SUCCESSFUL',
  failure: 'FAILED',
};

/** The repository's web page, without credentials a URL may carry. */
function webUrlOf(repository: string): string {
  const where = gitHostRepository(repository);
  return where === undefined ? repository : `${where.origin}/${where.path}`;
}

/**
 * Reading a job back from a queue message. Only our own functions send to
 * the queues, but a message outlives a deployment: a job written by an older
 * version, or one typed by hand into the console, is refused by name here
 * rather than failing somewhere inside a use-case.
 */
import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { DELETION_POLICIES } from '../config/deletion-policy.ts';
import { NOTIFICATION_EVENTS } from '../config/schema.ts';
import { DriftlessError } from '../errors.ts';
import { runsInFetch, type ApplyJob, type FetchStepJob, type Job } from '../sync/jobs.ts';

/** A queue message that is not a job this version understands. */
export class InvalidJobError extends DriftlessError {
  readonly code = 'JOB_INVALID';
}

const track = z.string().check(z.minLength(1), z.maxLength(63));
const trigger = z.enum(['webhook', 'schedule', 'manual']);
const nonEmpty = z.string().check(z.minLength(1));
/** Who asked for a person's job (a dashboard user name). */
const by = z.optional(z.string().check(z.minLength(1), z.maxLength(256)));

const JOB = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('fetch'),
    track,
    trigger,
    hint: z.optional(z.object({ revision: z.string(), ref: z.string() })),
    deliveryId: z.optional(z.string()),
    revision: z.optional(nonEmpty),
    tick: z.optional(z.string()),
    by,
  }),
  z.object({
    type: z.literal('sync'),
    track,
    revision: nonEmpty,
    resolvedAt: z.iso.datetime({ offset: true }),
    trigger,
    by,
  }),
  z.object({
    type: z.literal('drift'),
    track,
    detectOnly: z.optional(z.boolean()),
    trigger: z.optional(z.enum(['schedule', 'manual'])),
    tick: z.optional(z.string()),
  }),
  z.object({ type: z.literal('rollback'), track, revision: nonEmpty, by }),
  z.object({
    type: z.literal('writeBack'),
    track,
    revision: nonEmpty,
    refused: z.optional(z.array(z.object({ subject: nonEmpty, error: z.string() }))),
    changes: z.array(
      z.object({
        subject: nonEmpty,
        apiVersion: nonEmpty,
        kind: nonEmpty,
        name: nonEmpty,
        namespace: z.optional(nonEmpty),
        file: nonEmpty,
        line: z.number(),
        // An object to add to Git (writeBack.include), or a SOPS file encrypted anew.
        add: z.optional(z.record(z.string(), z.unknown())),
        replace: z.optional(z.object({ content: z.string(), base: z.string() })),
        fields: z.array(
          z.object({
            path: z.string(),
            value: z.optional(z.unknown()),
            base: z.optional(z.unknown()),
          }),
        ),
      }),
    ),
    trigger: z.enum(['schedule', 'manual']),
    tick: z.optional(z.string()),
  }),
  z.object({
    type: z.literal('discover'),
    track,
    runsIn: z.enum(['apply', 'fetch']),
    tick: z.optional(z.string()),
  }),
  z.object({
    type: z.literal('notify'),
    track,
    events: z.array(
      z.object({
        track,
        event: z.enum(NOTIFICATION_EVENTS),
        revision: z.nullable(z.string()),
        result: z.string(),
        message: z.string(),
        subjects: z.array(z.string()),
        time: z.string(),
        subjectsOmitted: z.optional(z.int().check(z.nonnegative())),
      }),
    ),
    receivers: z.array(nonEmpty),
  }),
  z.object({
    type: z.literal('lifecycle'),
    track,
    action: z.enum(['suspend', 'resume', 'unpin', 'delete']),
    policy: z.optional(z.enum(DELETION_POLICIES)),
    by,
  }),
]);

/** zod/mini has no messages of its own; these are the ones classic zod gave. */
const MESSAGES = { error: en().localeError };

/**
 * The job in a message body.
 *
 * @throws {InvalidJobError} naming what is wrong (never quoting the body).
 */
export function parseJob(body: string): Job {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new InvalidJobError('message body is not JSON', { cause: error });
  }
  const parsed = JOB.safeParse(value, MESSAGES);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(job)'}: ${issue.message}`,
    );
    throw new InvalidJobError(`message is not a job: ${problems.join('; ')}`);
  }
  return parsed.data as Job;
}

/** A job the fetch function runs: a fetch, or the discovery of a repository source. */
export function parseFetchJob(body: string): FetchStepJob {
  const job = parseJob(body);
  if (!runsInFetch(job)) {
    throw new InvalidJobError(`${job.type} job for track "${job.track}" on the fetch queue`);
  }
  return job as FetchStepJob;
}

/** A job the apply function runs: sync, drift, rollback, lifecycle, or the discovery of a cluster source. */
export function parseApplyJob(body: string): ApplyJob {
  const job = parseJob(body);
  if (runsInFetch(job)) {
    throw new InvalidJobError(`${job.type} job for track "${job.track}" on the apply queue`);
  }
  return job as ApplyJob;
}

/**
 * The real use-cases behind each job type, over the CLI context's ports: the
 * same core the Lambda functions run, in one process. Cluster connections and
 * the Git source are built on first use and shared by every job; each
 * use-case module is loaded on its first job, so a stack that only fetches
 * never loads the apply code.
 */
import type { LocalContext } from '../sync/local-context.ts';
import type { JobHandlers, JobOutcome } from './job-runner.ts';

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

function stringField(value: unknown, name: string): string | undefined {
  const found = field(value, name);
  return typeof found === 'string' ? found : undefined;
}

/**
 * The parts of a use-case's result that logs and metrics read. Results differ
 * per use-case; they share `result` (a fetch says `outcome`), `revision` and `error`.
 */
export function outcomeOf(value: unknown): JobOutcome {
  const error = stringField(value, 'error');
  const revision = stringField(value, 'revision');
  const result =
    stringField(value, 'result') ??
    stringField(value, 'outcome') ??
    (error === undefined ? 'done' : 'failed');
  return {
    result,
    ...(revision === undefined ? {} : { revision }),
    ...(error === undefined ? {} : { error }),
  };
}

/** A drift result (`drift -o json`) names no `result`: say what happened in one word. */
export function driftOutcomeOf(value: unknown): JobOutcome {
  const base = outcomeOf(value);
  if (stringField(value, 'result') !== undefined || base.error !== undefined) return base;
  // Objects that could not be read or corrected: the check itself failed for them.
  const errors = field(value, 'errors');
  if (Array.isArray(errors) && errors.length > 0) {
    const messages = errors.map((entry) => stringField(entry, 'error') ?? String(entry));
    return { ...base, result: 'failed', error: messages.join('; ') };
  }
  const drifted = field(value, 'drifted');
  const missing = field(value, 'missing');
  const found =
    (Array.isArray(drifted) && drifted.length > 0) ||
    (Array.isArray(missing) && missing.length > 0);
  const result = field(value, 'corrected') === true ? 'corrected' : found ? 'drifted' : 'clean';
  return { ...base, result };
}

/** Handlers running the `src/sync/` use-cases with `ctx`'s stores, Git source and clusters. */
export function useCaseHandlers(ctx: LocalContext): JobHandlers {
  return {
    async fetch(track, job) {
      const [{ fetchTrack }, source] = await Promise.all([
        import('../sync/fetch-track.ts'),
        ctx.source(),
      ]);
      const { result, next } = await fetchTrack(track, job, {
        source,
        artifacts: ctx.artifacts,
        state: ctx.state,
      });
      return { ...outcomeOf(result), ...(next ? { next: [next] } : {}) };
    },
    async sync(track, job) {
      const [{ applyRevision }, { dependentsToResume }] = await Promise.all([
        import('../sync/apply-revision.ts'),
        import('../sync/resume-dependents.ts'),
      ]);
      const cluster = await ctx.cluster(track);
      const result = await applyRevision(track, job, {
        cluster,
        artifacts: ctx.artifacts,
        state: ctx.state,
      });
      const next = await dependentsToResume(result, ctx.config.tracks, ctx.state, job.trigger);
      return { ...outcomeOf(result), ...(next.length > 0 ? { next } : {}) };
    },
    async drift(track, job) {
      const { reconcileDrift } = await import('../sync/reconcile-drift.ts');
      const cluster = await ctx.cluster(track);
      return driftOutcomeOf(
        await reconcileDrift(track, job, { cluster, artifacts: ctx.artifacts, state: ctx.state }),
      );
    },
    async rollback(track, job) {
      const [{ rollbackTrack }, { dependentsToResume }] = await Promise.all([
        import('../sync/rollback.ts'),
        import('../sync/resume-dependents.ts'),
      ]);
      const cluster = await ctx.cluster(track);
      const result = await rollbackTrack(track, job, {
        cluster,
        artifacts: ctx.artifacts,
        state: ctx.state,
      });
      const next = await dependentsToResume(result, ctx.config.tracks, ctx.state, 'manual');
      return { ...outcomeOf(result), ...(next.length > 0 ? { next } : {}) };
    },
  };
}

/**
 * Health checks written as CEL expressions over the live object (`self`),
 * with Flux's `healthCheckExprs` semantics, for kinds whose readiness the
 * built-in checks cannot know (custom resources without Ready conditions):
 * `inProgress`, then `failed`, then `current` are evaluated; the first true
 * one decides, and when none is true the object is still in progress.
 * A field missing from the object makes the expression not true yet (a
 * status not written so far), rather than failing the sync.
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import { ConfigError, type ConfigIssue } from '../config/config-error.ts';
import type { HealthCheckExpr } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { CustomHealth, HealthState } from './health.ts';

type Compiled = (variables: Record<string, unknown>) => unknown;

const compiled = new Map<string, Compiled>();

let parseCel: ((expression: string) => unknown) | undefined;

/**
 * Loads the CEL parser (about 110 KB of code) once. Only tracks that declare
 * expressions need it, so every other command and sync starts without it.
 */
export async function loadCel(): Promise<void> {
  parseCel ??= (await import('@marcbachmann/cel-js')).parse;
}

/** The expression parsed (once per process); throws with CEL's message, caret included. */
export function compileCel(expression: string): Compiled {
  let program = compiled.get(expression);
  if (program === undefined) {
    if (parseCel === undefined) throw new Error('the CEL parser is not loaded (loadCel)');
    program = parseCel(expression) as Compiled;
    compiled.set(expression, program);
  }
  return program;
}

/** Why `expression` does not parse, or undefined (for config validation). */
export function celProblem(expression: string): string | undefined {
  try {
    compileCel(expression);
    return undefined;
  } catch (error) {
    return messageOf(error).split('\n')[0];
  }
}

function holds(expression: string, object: KubeObject): { value: boolean; error?: string } {
  try {
    const value = compileCel(expression)({ self: object });
    if (typeof value !== 'boolean') {
      return { value: false, error: `${expression} gave ${String(value)}, not a bool` };
    }
    return { value };
  } catch (error) {
    // `No such key`: the field is not there (yet); anything else is reported the same way.
    return { value: false, error: `${expression}: ${messageOf(error).split('\n')[0]}` };
  }
}

/** The track's expressions as a custom health judge, or undefined when it has none. */
export async function exprHealth(
  exprs: readonly HealthCheckExpr[] | undefined,
): Promise<CustomHealth | undefined> {
  if (exprs === undefined || exprs.length === 0) return undefined;
  await loadCel();
  return (object) => judgeByExprs(object, exprs);
}

/** The expressions' verdict on `object`, or undefined when none is for its kind. */
export function judgeByExprs(
  object: KubeObject,
  exprs: readonly HealthCheckExpr[],
): { state: Exclude<HealthState, 'NotFound'>; message: string } | undefined {
  const rule = exprs.find((e) => e.apiVersion === object.apiVersion && e.kind === object.kind);
  if (rule === undefined) return undefined;
  if (rule.inProgress !== undefined && holds(rule.inProgress, object).value) {
    return { state: 'InProgress', message: `in progress: ${rule.inProgress}` };
  }
  if (rule.failed !== undefined && holds(rule.failed, object).value) {
    return { state: 'Failed', message: `failed: ${rule.failed}` };
  }
  const current = holds(rule.current, object);
  if (current.value) return { state: 'Current', message: `current: ${rule.current}` };
  return {
    state: 'InProgress',
    message: current.error ?? `waiting for ${rule.current}`,
  };
}

/**
 * Refuses (ConfigError naming each field) the config's CEL expressions
 * that do not parse. Run where health is judged (the apply function, the CLI and
 * serve) right after the config is loaded.
 */
export async function checkHealthExprs(
  config: {
    readonly tracks: readonly { readonly healthCheckExprs?: readonly HealthCheckExpr[] }[];
  },
  file: string,
): Promise<void> {
  const problems: ConfigIssue[] = [];
  const { tracks } = config;
  if (tracks.some((track) => (track.healthCheckExprs ?? []).length > 0)) await loadCel();
  tracks.forEach((track, t) =>
    (track.healthCheckExprs ?? []).forEach((rule, r) => {
      for (const field of ['current', 'inProgress', 'failed'] as const) {
        const expression = rule[field];
        const problem = expression === undefined ? undefined : celProblem(expression);
        if (problem !== undefined) {
          problems.push({
            file,
            path: `tracks[${t}].healthCheckExprs[${r}].${field}`,
            message: `${JSON.stringify(expression)} is not a CEL expression: ${problem}`,
          });
        }
      }
    }),
  );
  if (problems.length > 0) throw new ConfigError(problems);
}

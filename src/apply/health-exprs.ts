/**
 * Health checks written as CEL expressions over the live object (`self`),
 * with Flux's `healthCheckExprs` semantics, for kinds whose readiness the
 * built-in checks cannot know (custom resources without Ready conditions):
 * `inProgress`, then `failed`, then `current` are evaluated; the first true
 * one decides, and when none is true the object is still in progress.
 * A field or list item missing from the object makes the expression not
 * true yet (a status not written so far), rather than failing the sync. An
 * expression that cannot give true or false, or that CEL cannot evaluate on
 * the object for any other reason (`no such overload: dyn<int> * double`),
 * fails the object at once: waiting for it would only end at the track's
 * timeout.
 */
import type { Environment, EvaluationError, ParseResult } from '@marcbachmann/cel-js';
import type { KubeObject } from '../cluster/kube-object.ts';
import { ConfigError, type ConfigIssue } from '../config/config-error.ts';
import type { HealthCheckExpr } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { CustomHealth, HealthState } from './health.ts';

const FIELDS = ['inProgress', 'failed', 'current'] as const;
type Field = (typeof FIELDS)[number];

let environment: Environment | undefined;
/** cel-js's class of errors raised while evaluating, loaded with the parser. */
let evaluationError: typeof EvaluationError | undefined;
const compiled = new Map<string, ParseResult>();
const problems = new Map<string, string | undefined>();

/**
 * Loads the CEL parser (about 110 KB of code) once. Only tracks that declare
 * expressions need it, so every other command and sync starts without it.
 */
export async function loadCel(): Promise<void> {
  if (environment !== undefined) return;
  const cel = await import('@marcbachmann/cel-js');
  evaluationError ??= cel.EvaluationError;
  // `self` is the only variable, so an expression written for Flux's top-level `status`
  // or `metadata` is refused when the config loads instead of failing every poll.
  // `??=`: two callers may have awaited the import at once.
  environment ??= new cel.Environment().registerVariable('self', 'map');
}

/** The expression parsed (once per process); throws with CEL's message, caret included. */
export function compileCel(expression: string): ParseResult {
  let program = compiled.get(expression);
  if (program === undefined) {
    if (environment === undefined) throw new Error('the CEL parser is not loaded (loadCel)');
    program = environment.parse(expression);
    compiled.set(expression, program);
  }
  return program;
}

const firstLine = (error: unknown): string => messageOf(error).split('\n')[0] ?? '';

/**
 * Why `expression` can never judge health, or undefined: it does not parse,
 * CEL's type check refuses it (an unknown variable or function, `1 + 'a'`),
 * or its type is known to be other than bool. A `dyn` result (a field of
 * `self`) is only known when evaluated: see `evaluate`.
 */
export function celProblem(expression: string): string | undefined {
  if (problems.has(expression)) return problems.get(expression);
  const problem = staticProblem(expression);
  problems.set(expression, problem);
  return problem;
}

function staticProblem(expression: string): string | undefined {
  const quoted = JSON.stringify(expression);
  let program: ParseResult;
  try {
    program = compileCel(expression);
  } catch (error) {
    return `${quoted} is not a CEL expression: ${firstLine(error)}`;
  }
  const checked = program.check();
  if (!checked.valid) {
    const why = firstLine(checked.error);
    const hint = why.startsWith('Unknown variable')
      ? ' (the object is the variable self, as in self.status)'
      : '';
    return `${quoted} cannot be evaluated: ${why}${hint}`;
  }
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    return `${quoted} has type ${checked.type}, not bool (true or false)`;
  }
  return undefined;
}

/** The CEL name of a value's type (cel-js gives JSON numbers as doubles), for messages. */
function celTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'bigint') return 'int';
  if (typeof value !== 'object') return typeof value;
  if (Array.isArray(value)) return 'list';
  if (value instanceof Uint8Array) return 'bytes';
  if (value instanceof Date) return 'timestamp';
  if (value instanceof Map || value.constructor === Object) return 'map';
  // cel-js's own classes: UnsignedInt, Duration, Optional, Type.
  return (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
}

/**
 * `value` with its whole numbers as CEL ints (BigInt). JSON has one number type, which
 * cel-js reads as double; Kubernetes decodes whole numbers as int64, so Flux's CEL sees
 * `self.status.replicas` as an int and `self.status.replicas / 2` works there. Read as
 * doubles it failed with "no such overload: dyn<double> / int" and waited for the timeout.
 */
function asCelValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(asCelValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, asCelValue(item)]));
  }
  return value;
}

/**
 * One expression on `object`: whether it holds, why it cannot tell yet
 * (`waiting`), or why it never can (`broken`, naming the rule's field).
 * The value itself is never quoted: it may be read from a Secret.
 */
function evaluate(
  expression: string,
  where: string,
  object: KubeObject,
): { holds: boolean; waiting?: string; broken?: string } {
  // Checked again (once per expression): not every caller ran checkHealthExprs on its config.
  const problem = celProblem(expression);
  if (problem !== undefined) return { holds: false, broken: `${where}: ${problem}` };
  try {
    const value: unknown = compileCel(expression)({ self: object });
    if (typeof value === 'boolean') return { holds: value };
    return {
      holds: false,
      broken: `${where} ${JSON.stringify(expression)} returned type ${celTypeOf(value)}, not bool (true or false)`,
    };
  } catch (error) {
    const { reason, notThereYet } = whyNot(error);
    if (notThereYet) return { holds: false, waiting: `${expression}: ${reason}` };
    return {
      holds: false,
      broken: `${where} ${JSON.stringify(expression)} cannot be evaluated on this object: ${reason}`,
    };
  }
}

/**
 * cel-js's codes of evaluation errors that say a field, or an item of a list, is not there:
 * its controller may not have written it yet. Any other error comes back on every poll of the
 * same object, so it fails the object rather than waiting for the timeout.
 */
const NOT_THERE_YET = new Set(['no_such_key', 'index_out_of_bounds']);

/**
 * cel-js's codes of evaluation errors whose messages hold only types (`dyn<int> * double`),
 * the expression's own names or a fixed text. Other messages can quote a value of the object
 * (`Invalid duration string: <the value>`), which may be read from a Secret.
 */
const VALUE_FREE = new Set([
  'no_such_overload',
  'no_matching_overload',
  'invalid_logical_operand',
  'invalid_condition_type',
  'invalid_comprehension_range',
  'invalid_comparison_type',
  'variable_type_mismatch',
  'division_by_zero',
  'modulo_by_zero',
  'int_conversion_error',
  'uint_conversion_error',
  'double_conversion_error',
  'invalid_timestamp',
  'optional_value_missing',
]);

const MIXED_NUMBERS =
  ' (CEL does not mix int and double: whole numbers of the object are ints, so convert with' +
  ' double(...), as in double(self.spec.replicas) * 0.5)';

/**
 * Why evaluating an expression threw, in words that never quote a value of the object, and
 * whether it only lacks a field or list item (see NOT_THERE_YET).
 */
function whyNot(error: unknown): { reason: string; notThereYet: boolean } {
  if (evaluationError === undefined || !(error instanceof evaluationError)) {
    // Not one of CEL's errors (a fault in the evaluator): its message is unknown ground.
    return {
      reason: `${nameOf(error)} (the value is not shown)`,
      notThereYet: false,
    };
  }
  const { code, summary } = error;
  if (NOT_THERE_YET.has(code)) {
    // A key or index written in the expression (`.ready`, `[0]`) is shown; one computed from
    // the object (`[self.data.key]`) is a value of it. CEL's words for an index also hold
    // the list's size, not needed to see what is missing.
    const written = writtenKey(error.node);
    const what =
      code === 'index_out_of_bounds' ? 'No such key: index out of bounds' : 'No such key';
    if (written === undefined)
      return { reason: `${what} (the value is not shown)`, notThereYet: true };
    const reason = code === 'no_such_key' ? summary : `No such key: index ${written} out of bounds`;
    return { reason, notThereYet: true };
  }
  if (!VALUE_FREE.has(code)) {
    return { reason: `${error.name} ${code} (the value is not shown)`, notThereYet: false };
  }
  const mixesNumbers =
    code === 'no_such_overload' && /\bint\b/.test(summary) && /\bdouble\b/.test(summary);
  return { reason: summary + (mixesNumbers ? MIXED_NUMBERS : ''), notThereYet: false };
}

/** The key or index a field access names when the expression writes it literally, or undefined. */
function writtenKey(node: EvaluationError['node']): string | undefined {
  switch (node?.op) {
    case '.':
    case '.?':
      return node.args[1];
    case '[]':
    case '[?]': {
      const [, index] = node.args;
      if (index.op !== 'value') return undefined;
      return typeof index.args === 'string' || typeof index.args === 'bigint'
        ? String(index.args)
        : undefined;
    }
    default:
      return undefined;
  }
}

const nameOf = (error: unknown): string => (error instanceof Error ? error.name : typeof error);

/** The track's expressions as a custom health judge, or undefined when it has none. */
export async function exprHealth(
  exprs: readonly HealthCheckExpr[] | undefined,
): Promise<CustomHealth | undefined> {
  if (exprs === undefined || exprs.length === 0) return undefined;
  await loadCel();
  return (object) => judgeByExprs(object, exprs);
}

const VERDICT: Record<Field, { state: Exclude<HealthState, 'NotFound'>; says: string }> = {
  inProgress: { state: 'InProgress', says: 'in progress' },
  failed: { state: 'Failed', says: 'failed' },
  current: { state: 'Current', says: 'current' },
};

/** The expressions' verdict on `object`, or undefined when none is for its kind. */
export function judgeByExprs(
  object: KubeObject,
  exprs: readonly HealthCheckExpr[],
): { state: Exclude<HealthState, 'NotFound'>; message: string } | undefined {
  const index = exprs.findIndex(
    (e) => e.apiVersion === object.apiVersion && e.kind === object.kind,
  );
  const rule = exprs[index];
  if (rule === undefined) return undefined;
  let waiting: string | undefined;
  const self = asCelValue(object) as KubeObject;
  for (const field of FIELDS) {
    const expression = rule[field];
    if (expression === undefined) continue;
    const result = evaluate(expression, `healthCheckExprs[${index}].${field}`, self);
    if (result.broken !== undefined) return { state: 'Failed', message: result.broken };
    if (result.holds) {
      const { state, says } = VERDICT[field];
      return { state, message: `${says}: ${expression}` };
    }
    if (field === 'current') waiting = result.waiting;
  }
  return { state: 'InProgress', message: waiting ?? `waiting for ${rule.current}` };
}

/**
 * Refuses (ConfigError naming each field) the config's CEL expressions that
 * can never judge health (see `celProblem`). Run where health is judged (the
 * apply function, the CLI and serve) right after the config is loaded.
 */
export async function checkHealthExprs(
  config: {
    readonly tracks: readonly { readonly healthCheckExprs?: readonly HealthCheckExpr[] }[];
  },
  file: string,
): Promise<void> {
  const issues: ConfigIssue[] = [];
  const { tracks } = config;
  if (tracks.some((track) => (track.healthCheckExprs ?? []).length > 0)) await loadCel();
  tracks.forEach((track, t) =>
    (track.healthCheckExprs ?? []).forEach((rule, r) => {
      for (const field of ['current', 'inProgress', 'failed'] as const) {
        const expression = rule[field];
        const problem = expression === undefined ? undefined : celProblem(expression);
        if (problem !== undefined) {
          issues.push({
            file,
            path: `tracks[${t}].healthCheckExprs[${r}].${field}`,
            message: problem,
          });
        }
      }
    }),
  );
  if (issues.length > 0) throw new ConfigError(issues);
}

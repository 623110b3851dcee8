/**
 * Post-build variable substitution with the semantics of Flux's
 * kustomize-controller (`postBuild`, strict mode):
 *
 * - `${VAR}` is the variable's value; `${VAR:-default}` and `${VAR:=default}`
 *   the default when VAR is unset or empty; names are `[_a-zA-Z][_a-zA-Z0-9]*`;
 * - `$${VAR}` is the literal text `${VAR}`; a bare `$VAR` is left alone, so
 *   shell scripts in ConfigMaps keep working (as Flux documents);
 * - strict: a variable without a value or a default fails the revision,
 *   naming the variable and the object; so does a malformed `${...}`;
 * - objects annotated `driftless.dev/substitute: disabled` (or Flux's
 *   `kustomize.toolkit.fluxcd.io/substitute: disabled`) are left as they are.
 *
 * Flux substitutes in the object's YAML text and parses it again. Here every
 * string value and key is substituted on its own, so a value holding a line
 * break or `: ` cannot add fields to the object. The one thing text
 * substitution gives that this must reproduce: `replicas: ${REPLICAS}`
 * becomes the number 3, not the string "3". So a value that is exactly one
 * `${...}` and whose result reads as a YAML integer, float or boolean takes
 * that type — except where Kubernetes only takes strings (labels,
 * annotations, ConfigMap/Secret data, container env values), where it stays
 * text. Error messages name variables, never values: values may be secrets.
 */
import { DriftlessError } from '../errors.ts';
import { isJsonObject } from './json-value.ts';

export type Variables = Readonly<Record<string, string>>;

export interface SubstituteOptions {
  /** The object, for messages: e.g. `ConfigMap default/app (deploy/app.yaml)`. */
  readonly subject: string;
  /**
   * Whether a text holds a secret value (decrypted by SOPS, which substitution follows): then a
   * message about it names no part of it, neither the expression nor the variable.
   */
  readonly isSecret?: (text: string) => boolean;
}

/** A variable is missing or an expression is malformed; names the object and the variable. */
export class SubstitutionError extends DriftlessError {
  readonly code = 'SubstitutionFailed';
}

const DISABLE_ANNOTATIONS = ['driftless.dev/substitute', 'kustomize.toolkit.fluxcd.io/substitute'];
const NAME = /^[_a-zA-Z][_a-zA-Z0-9]*$/;
/** `$${` (escaped) or `${...}`, up to the first `}` (none: malformed). */
const EXPRESSION = /\$\$\{|\$\{([^}]*)(\}?)/g;
/** YAML 1.2 core schema numbers and booleans: what a re-parse of substituted text would type. */
const YAML_INT = /^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/;
const YAML_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const YAML_BOOL = /^(?:true|True|TRUE|false|False|FALSE)$/;

/** Whether an object opts out of substitution. */
export function substitutionDisabled(object: unknown): boolean {
  if (!isJsonObject(object) || !isJsonObject(object.metadata)) return false;
  const annotations = object.metadata.annotations;
  if (!isJsonObject(annotations)) return false;
  return DISABLE_ANNOTATIONS.some((key) => annotations[key] === 'disabled');
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

interface Expression {
  readonly name: string;
  readonly fallback: string | undefined;
}

/**
 * How a message shows a piece of the text: as it is when the text is Git's, not at all when it
 * holds a decrypted value, which no message may quote, even in part.
 */
type Quote = (piece: string) => string;

const SHOWN: Quote = (piece) => piece;
const SECRET_TEXT = 'a decrypted value';

/** Parses the inside of `${...}`; throws naming the expression (unless `quote` hides it). */
function parseExpression(inner: string, subject: string, quote: Quote): Expression {
  const operator = /^([^:]*)(:[-=])([\s\S]*)$/.exec(inner);
  const name = operator ? operator[1]! : inner;
  if (!NAME.test(name)) {
    throw new SubstitutionError(
      `${subject}: ${quote(`\${${shorten(inner)}}`)} is not a valid variable expression (a name of letters, digits and _, optionally :-default or :=default; write $\${...} for a literal)`,
    );
  }
  const fallback = operator ? operator[3]! : undefined;
  if (fallback?.includes('${')) {
    throw new SubstitutionError(
      `${subject}: ${quote(`\${${shorten(inner)}}`)} has a nested expression in its default, which is not supported`,
    );
  }
  return { name, fallback };
}

/** The substituted text, and whether it was exactly one expression. */
function substituteText(
  text: string,
  variables: Variables,
  options: SubstituteOptions,
): { text: string; whole: boolean } {
  const { subject } = options;
  const secret = options.isSecret?.(text) === true;
  // A decrypted value's own `${`: not a word of it in the message, only where it is.
  const quote: Quote = secret ? () => `${SECRET_TEXT} holds an expression that` : SHOWN;
  let whole = false;
  const result = text.replace(
    EXPRESSION,
    (match: string, inner: string | undefined, close: string | undefined, offset: number) => {
      if (match === '$${') return '${';
      if (close !== '}') {
        throw new SubstitutionError(
          `${subject}: ${secret ? SECRET_TEXT : `"${shorten(text.slice(offset))}"`} has \${ without a closing } (write $\${ for a literal, or annotate the object driftless.dev/substitute: disabled)`,
        );
      }
      const { name, fallback } = parseExpression(inner ?? '', subject, quote);
      whole = offset === 0 && match.length === text.length;
      const value = Object.hasOwn(variables, name) ? variables[name] : undefined;
      if (fallback !== undefined && (value === undefined || value === '')) return fallback;
      if (value === undefined) {
        throw new SubstitutionError(
          secret
            ? `${subject}: ${SECRET_TEXT} holds a variable that is not set and has no default (write $\${ for a literal, or annotate the object driftless.dev/substitute: disabled)`
            : `${subject}: variable \${${name}} is not set and has no default`,
        );
      }
      return value;
    },
  );
  return { text: result, whole };
}

/** A result that a YAML re-parse would type as a number or boolean, as such. */
function typed(text: string): string | number | boolean {
  if (YAML_BOOL.test(text)) return text.toLowerCase() === 'true';
  if (YAML_INT.test(text)) {
    const number = Number(text);
    return Number.isSafeInteger(number) ? number : text;
  }
  if (YAML_FLOAT.test(text)) return Number(text);
  return text;
}

/** Paths (from the object's root) whose string values stay strings: Kubernetes takes nothing else there. */
function stringsOnly(path: readonly string[]): boolean {
  const [first, second] = path;
  if (first === 'metadata' && (second === 'labels' || second === 'annotations')) return true;
  if (first === 'data' || first === 'stringData' || first === 'binaryData') return true;
  // A container's env: [{name, value}].
  return path.length >= 2 && path.at(-1) === 'value' && path.includes('env');
}

/**
 * `object` with `variables` substituted: a new object, or the same one when
 * nothing changed or it opts out. Throws {@link SubstitutionError}.
 */
export function substituteVariables<T>(
  object: T,
  variables: Variables,
  options: SubstituteOptions,
): T {
  if (substitutionDisabled(object)) return object;
  const walk = (value: unknown, path: string[]): unknown => {
    if (typeof value === 'string') {
      if (!value.includes('${')) return value;
      const { text, whole } = substituteText(value, variables, options);
      return whole && !stringsOnly(path) ? typed(text) : text;
    }
    if (Array.isArray(value)) {
      let changed = false;
      const items = value.map((item, index) => {
        const next = walk(item, [...path, String(index)]);
        changed ||= next !== item;
        return next;
      });
      return changed ? items : value;
    }
    if (isJsonObject(value)) {
      let changed = false;
      const entries = Object.entries(value).map(([key, item]) => {
        const nextKey = key.includes('${') ? substituteText(key, variables, options).text : key;
        const next = walk(item, [...path, nextKey]);
        changed ||= next !== item || nextKey !== key;
        return [nextKey, next] as const;
      });
      return changed ? Object.fromEntries(entries) : value;
    }
    return value;
  };
  return walk(object, []) as T;
}

/** Names of the variables an object references, in order of first use. */
export function referencedVariables(object: unknown): string[] {
  const names = new Set<string>();
  const visit = (text: string): void => {
    for (const match of text.matchAll(EXPRESSION)) {
      if (match[0] === '$${' || match[2] !== '}') continue;
      const name = /^[^:]*/.exec(match[1] ?? '')![0];
      if (NAME.test(name)) names.add(name);
    }
  };
  const walk = (value: unknown): void => {
    if (typeof value === 'string') visit(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (isJsonObject(value)) {
      for (const [key, item] of Object.entries(value)) {
        visit(key);
        walk(item);
      }
    }
  };
  walk(object);
  return [...names];
}

/**
 * The variables a `substituteFrom` secret holds: a JSON object (strings,
 * numbers and booleans; numbers as written by JSON) or `KEY=VALUE` lines
 * (`#` comments, blank lines and an `export ` prefix allowed; one pair of
 * matching quotes around a value removed). Errors name the line, never a
 * value.
 */
export function parseVariables(text: string, origin: string): Record<string, string> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) return jsonVariables(trimmed, origin);
  const variables: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const at = `${origin}, line ${index + 1}`;
    const equals = line.indexOf('=');
    if (equals < 0) throw new SubstitutionError(`${at}: expected KEY=VALUE`);
    const name = line
      .slice(0, equals)
      .replace(/^export\s+/, '')
      .trim();
    if (!NAME.test(name)) {
      throw new SubstitutionError(`${at}: "${shorten(name)}" is not a variable name`);
    }
    let value = line.slice(equals + 1).trim();
    if (value.length >= 2 && /^(['"]).*\1$/s.test(value)) value = value.slice(1, -1);
    variables[name] = value;
  });
  return variables;
}

function jsonVariables(text: string, origin: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message may quote the text: say only where.
    throw new SubstitutionError(`${origin}: is neither a JSON object nor KEY=VALUE lines`);
  }
  if (!isJsonObject(parsed)) throw new SubstitutionError(`${origin}: must be a JSON object`);
  const variables: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (!NAME.test(name)) {
      throw new SubstitutionError(`${origin}: "${shorten(name)}" is not a variable name`);
    }
    if (typeof value === 'string') variables[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean')
      variables[name] = String(value);
    else {
      throw new SubstitutionError(
        `${origin}: variable ${name} must be a string, number or boolean, not ${value === null ? 'null' : Array.isArray(value) ? 'a list' : 'an object'}`,
      );
    }
  }
  return variables;
}

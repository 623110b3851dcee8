/**
 * Kubernetes label selectors in their string form (`app=web,tier!=db`,
 * `env in (prod,staging)`, `!legacy`), for ignore-rule targets.
 */

type Requirement =
  | { readonly op: 'exists' | 'notexists'; readonly key: string }
  | { readonly op: 'in' | 'notin'; readonly key: string; readonly values: readonly string[] };

/** Splits on commas outside parentheses. */
function splitRequirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function parseRequirement(text: string): Requirement {
  let match = /^!\s*([^\s=!(),]+)$/.exec(text);
  if (match) return { op: 'notexists', key: match[1] as string };
  match = /^([^\s=!(),]+)\s*(==|=|!=)\s*([^\s=!(),]*)$/.exec(text);
  if (match) {
    const [, key, op, value] = match as unknown as [string, string, string, string];
    return { op: op === '!=' ? 'notin' : 'in', key, values: [value] };
  }
  match = /^([^\s=!(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(text);
  if (match) {
    const [, key, op, list] = match as unknown as [string, string, 'in' | 'notin', string];
    return { op, key, values: list.split(',').map((v) => v.trim()) };
  }
  match = /^([^\s=!(),]+)$/.exec(text);
  if (match) return { op: 'exists', key: match[1] as string };
  throw new Error(`"${text}" is not a label selector requirement`);
}

/** A predicate over labels; throws naming the part it cannot read. */
export function parseLabelSelector(
  selector: string,
): (labels: Readonly<Record<string, string>>) => boolean {
  const requirements = splitRequirements(selector).map(parseRequirement);
  return (labels) =>
    requirements.every((r) => {
      const has = Object.hasOwn(labels, r.key);
      switch (r.op) {
        case 'exists':
          return has;
        case 'notexists':
          return !has;
        case 'in':
          return has && r.values.includes(labels[r.key] as string);
        case 'notin':
          return !has || !r.values.includes(labels[r.key] as string);
      }
    });
}

// Grammar of node-semver ranges (https://github.com/npm/node-semver#range-grammar),
// loosened the way node-semver itself is: optional `v`, spaces after an operator, `~>`.
const NR = String.raw`(?:0|[1-9]\d*)`;
const XR = String.raw`(?:[xX*]|${NR})`;
const PART = String.raw`[0-9A-Za-z-]+`;
const QUALIFIER = String.raw`(?:-${PART}(?:\.${PART})*)?(?:\+${PART}(?:\.${PART})*)?`;
const PARTIAL = String.raw`[vV=]?${XR}(?:\.${XR}(?:\.${XR}${QUALIFIER})?)?`;
const SIMPLE = new RegExp(String.raw`^(?:<=|>=|<|>|=|~>?|\^)?${PARTIAL}$`);
const HYPHEN = new RegExp(String.raw`^${PARTIAL}\s+-\s+${PARTIAL}$`);
const OPERATOR_SPACE = /(<=|>=|<|>|=|~>?|\^)\s+/g;

/**
 * Whether `text` is a semver range in node-semver syntax (`>=1.2.0 <2`,
 * `^1.4`, `1.x || 2.1 - 2.3`).
 *
 * Validation only, so a typo fails at config time; choosing the newest
 * matching tag belongs to the source module. An empty range is refused even
 * though node-semver reads it as `*`: writing `*` says so on purpose.
 */
export function isSemverRange(text: string): boolean {
  if (text.trim() === '') return false;
  return text.split('||').every((alternative) => {
    const range = alternative.trim();
    if (range === '') return false;
    if (HYPHEN.test(range)) return true;
    return range
      .replace(OPERATOR_SPACE, '$1')
      .split(/\s+/)
      .every((comparator) => SIMPLE.test(comparator));
  });
}

/**
 * Shell-style globs (`*` any run of characters, `?` one character), as
 * OpenSSH's known_hosts patterns and the names in a track's `rules` use them.
 */

/** Whether `name` matches `pattern` as a whole. */
export function globMatches(
  pattern: string,
  name: string,
  options: { readonly ignoreCase?: boolean } = {},
): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, options.ignoreCase ? 'i' : '').test(name);
}

/** An apiVersion split into group (`''` for core) and version. */
export interface GroupVersion {
  readonly group: string;
  readonly version: string;
}

/** Splits `apps/v1` or `v1`; `undefined` when it has empty parts or more than one `/`. */
export function splitApiVersion(apiVersion: string): GroupVersion | undefined {
  const parts = apiVersion.split('/');
  if (parts.length === 1 && parts[0] !== '') return { group: '', version: apiVersion };
  const [group, version] = parts;
  if (parts.length !== 2 || !group || !version) return undefined;
  return { group, version };
}

/** The inverse of {@link splitApiVersion}. */
export function joinApiVersion(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

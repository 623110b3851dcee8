/** A Kubernetes resource type as Faros' `--ignore-resource` names it. */
export interface ResourceType {
  /** Lowercase plural resource name, e.g. `jobs`. */
  readonly resource: string;
  /** API group; `''` for the core group. */
  readonly group: string;
  /** API version, e.g. `v1`. */
  readonly version: string;
}

const RESOURCE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/**
 * Parses Faros' `<resource>.<group>/<version>` form (`jobs.batch/v1`,
 * `ingresses.networking.k8s.io/v1`); the core group has no group part
 * (`configmaps/v1`).
 *
 * The resource is the lowercase plural, not the Kind, because that is what
 * discovery and RBAC use and what Faros users already have in their flags.
 */
export function parseResourceType(text: string): ResourceType | undefined {
  const slash = text.lastIndexOf('/');
  if (slash < 0) return undefined;
  const version = text.slice(slash + 1);
  const resourceAndGroup = text.slice(0, slash);
  const dot = resourceAndGroup.indexOf('.');
  const resource = dot < 0 ? resourceAndGroup : resourceAndGroup.slice(0, dot);
  const group = dot < 0 ? '' : resourceAndGroup.slice(dot + 1);
  if (!RESOURCE.test(resource) || !VERSION.test(version)) return undefined;
  if (group !== '' && !GROUP.test(group)) return undefined;
  return { resource, group, version };
}

/** Renders a resource type back to `<resource>.<group>/<version>` (`configmaps/v1` for core). */
export function formatResourceType(type: ResourceType): string {
  return type.group === ''
    ? `${type.resource}/${type.version}`
    : `${type.resource}.${type.group}/${type.version}`;
}

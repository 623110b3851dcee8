/**
 * API discovery: which resource serves an apiVersion + kind, and whether it is
 * namespaced. Read in two requests with aggregated discovery (GA since
 * Kubernetes 1.30), falling back to one request per group version on older
 * servers, and kept as an immutable snapshot; refresh after CRDs change.
 */
import { ClusterAuthError, ClusterUnreachableError } from './errors.ts';
import type { KubeTransport } from './kube-http.ts';

export interface ApiResource {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** The plural resource name used in URLs, e.g. `deployments`. */
  readonly plural: string;
  readonly namespaced: boolean;
  /** Whether it can be listed (`list` among its verbs): reviews and bindings cannot. */
  readonly listable: boolean;
}

/** A snapshot of what the API server serves. */
export class ResourceCatalog {
  private readonly byKind = new Map<string, ApiResource>();

  constructor(resources: Iterable<ApiResource>) {
    for (const resource of resources) {
      this.byKind.set(
        ResourceCatalog.key(resource.group, resource.version, resource.kind),
        resource,
      );
    }
  }

  private static key(group: string, version: string, kind: string): string {
    return `${group}/${version}/${kind}`;
  }

  /** The resource serving group/version/kind, or undefined when none does. */
  find(group: string, version: string, kind: string): ApiResource | undefined {
    return this.byKind.get(ResourceCatalog.key(group, version, kind));
  }

  /** The scope, in the form render's ScopeResolver expects. */
  scopeOf(group: string, version: string, kind: string): 'Namespaced' | 'Cluster' | undefined {
    const resource = this.find(group, version, kind);
    if (!resource) return undefined;
    return resource.namespaced ? 'Namespaced' : 'Cluster';
  }

  /**
   * Resources named `plural` (in `groups`, when given), one per group: the
   * version discovery listed first, the server's preferred one.
   */
  named(plural: string, groups?: readonly string[]): ApiResource[] {
    const found = new Map<string, ApiResource>();
    for (const resource of this.byKind.values()) {
      if (resource.plural !== plural || found.has(resource.group)) continue;
      if (groups === undefined || groups.includes('*') || groups.includes(resource.group)) {
        found.set(resource.group, resource);
      }
    }
    return [...found.values()];
  }

  /** One resource per group and kind, in the version discovery listed first. */
  kinds(): ApiResource[] {
    const found = new Map<string, ApiResource>();
    for (const resource of this.byKind.values()) {
      const key = `${resource.group}/${resource.kind}`;
      if (!found.has(key)) found.set(key, resource);
    }
    return [...found.values()];
  }

  get size(): number {
    return this.byKind.size;
  }

  /** Every `group/version` and `group/version/Kind` served (`v1`, `v1/Pod` for the core group), sorted. */
  apiVersions(): string[] {
    const entries = new Set<string>();
    for (const { group, version, kind } of this.byKind.values()) {
      const groupVersion = group ? `${group}/${version}` : version;
      entries.add(groupVersion);
      entries.add(`${groupVersion}/${kind}`);
    }
    return [...entries].sort();
  }
}

const AGGREGATED =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

interface AggregatedList {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: {
      version: string;
      resources?: {
        resource: string;
        responseKind?: { group?: string; version?: string; kind?: string };
        scope?: 'Namespaced' | 'Cluster';
        verbs?: string[];
      }[];
    }[];
  }[];
}

interface LegacyResourceList {
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}

async function getJson(transport: KubeTransport, path: string, accept?: string): Promise<unknown> {
  const response = await transport({ method: 'GET', path, ...(accept ? { accept } : {}) });
  if (response.status === 401 || response.status === 403) {
    // Reached, and refused: the credentials, not the network, are what to look at.
    const said = (response.body as { message?: unknown } | undefined)?.message;
    const detail = typeof said === 'string' && said !== '' ? `: ${said}` : '';
    throw new ClusterAuthError(
      `discovery: GET ${path} answered HTTP ${response.status} (${response.status === 401 ? 'the credentials were refused' : 'the credentials may not read the API'})${detail}`,
    );
  }
  if (response.status !== 200) {
    throw new ClusterUnreachableError(`discovery: GET ${path} answered HTTP ${response.status}`);
  }
  return response.body;
}

function fromAggregated(list: AggregatedList): ApiResource[] {
  const resources: ApiResource[] = [];
  for (const group of list.items ?? []) {
    const groupName = group.metadata?.name ?? '';
    for (const version of group.versions ?? []) {
      for (const r of version.resources ?? []) {
        if (!r.responseKind?.kind) continue;
        resources.push({
          group: groupName,
          version: version.version,
          kind: r.responseKind.kind,
          plural: r.resource,
          namespaced: r.scope === 'Namespaced',
          listable: r.verbs?.includes('list') ?? true,
        });
      }
    }
  }
  return resources;
}

async function legacyGroupVersion(
  transport: KubeTransport,
  group: string,
  version: string,
): Promise<ApiResource[]> {
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const list = (await getJson(transport, path)) as LegacyResourceList;
  return (list.resources ?? [])
    .filter((r) => !r.name.includes('/')) // subresources such as deployments/scale
    .map((r) => ({
      group,
      version,
      kind: r.kind,
      plural: r.name,
      namespaced: r.namespaced,
      listable: r.verbs?.includes('list') ?? true,
    }));
}

/** Reads what the API server serves. */
export async function discoverResources(transport: KubeTransport): Promise<ResourceCatalog> {
  const [core, groups] = await Promise.all([
    getJson(transport, '/api', AGGREGATED) as Promise<AggregatedList>,
    getJson(transport, '/apis', AGGREGATED) as Promise<AggregatedList & { groups?: unknown }>,
  ]);
  if (core.kind === 'APIGroupDiscoveryList' && groups.kind === 'APIGroupDiscoveryList') {
    return new ResourceCatalog([...fromAggregated(core), ...fromAggregated(groups)]);
  }
  // An older server answered with the legacy lists: walk every group version.
  const legacyGroups =
    (groups as { groups?: { name: string; versions: { version: string }[] }[] }).groups ?? [];
  const perVersion = await Promise.all([
    legacyGroupVersion(transport, '', 'v1'),
    ...legacyGroups.flatMap((g) =>
      g.versions.map((v) => legacyGroupVersion(transport, g.name, v.version)),
    ),
  ]);
  return new ResourceCatalog(perVersion.flat());
}

/** The server's gitVersion (`/version`), e.g. `v1.36.3`. */
export async function readServerVersion(transport: KubeTransport): Promise<string> {
  const version = ((await getJson(transport, '/version')) as { gitVersion?: unknown }).gitVersion;
  if (typeof version !== 'string' || version === '') {
    throw new ClusterUnreachableError('GET /version answered without a gitVersion');
  }
  return version;
}

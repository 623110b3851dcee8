/**
 * KubernetesPort over the API server's REST interface, with raw JSON bodies so
 * manifests reach server-side apply exactly as written.
 */
import type { ClusterEndpoint } from './cluster-endpoint.ts';
import {
  discoverResources,
  readServerVersion,
  type ApiResource,
  type ResourceCatalog,
} from './discovery.ts';
import { KubernetesApiError, UnknownResourceError, type ApiStatus } from './errors.ts';
import {
  createKubeTransport,
  type KubeHttpOptions,
  type KubeResponse,
  type KubeTransport,
} from './kube-http.ts';
import {
  splitApiVersion,
  subjectOf,
  type KubeObject,
  type ManagedFieldsEntry,
  type ObjectRef,
} from './kube-object.ts';
import { SharedWork } from './shared-work.ts';
import type {
  ApplyOptions,
  ApplyResult,
  DeleteOptions,
  KubernetesPort,
  ListQuery,
} from './kubernetes-port.ts';

const APPLY_PATCH = 'application/apply-patch+yaml';
const METADATA_LIST =
  'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';
const LIST_PAGE_SIZE = '500';

function statusOf(response: KubeResponse): ApiStatus {
  const body = response.body as
    (Partial<ApiStatus> & { details?: { causes?: ApiStatus['causes'] } }) | undefined;
  if (body && typeof body === 'object') {
    return {
      code: response.status,
      reason: body.reason,
      message: body.message,
      causes: body.details?.causes,
    };
  }
  return { code: response.status, message: typeof body === 'string' && body ? body : undefined };
}

/** The cluster behind an API server endpoint. */
export class KubeApiCluster implements KubernetesPort {
  /**
   * Shared by the port's copies (impersonating, or ending their requests at a signal): a
   * caller that gives up stops waiting for it; the last one cancels it.
   */
  private discovery: SharedWork<ResourceCatalog> | undefined;

  constructor(
    private readonly transport: KubeTransport,
    /** Whose discovery to share: an impersonating copy reads the same API server. */
    private readonly discoveryOf?: KubeApiCluster,
    /** Ends this copy's requests (withSignal), and its wait for the shared discovery. */
    private readonly signal?: AbortSignal,
  ) {}

  impersonate(user: string, groups: readonly string[]): KubernetesPort {
    const headers = { 'Impersonate-User': user, 'Impersonate-Group': groups };
    return new KubeApiCluster(
      (request) => this.transport({ ...request, headers: { ...request.headers, ...headers } }),
      this.discoveryOf ?? this,
      this.signal,
    );
  }

  withSignal(signal: AbortSignal): KubernetesPort {
    return new KubeApiCluster(
      (request) => this.transport({ ...request, signal }),
      this.discoveryOf ?? this,
      signal,
    );
  }

  /** The cluster at `endpoint`; nothing is sent until the first request. */
  static forEndpoint(endpoint: ClusterEndpoint, options?: KubeHttpOptions): KubeApiCluster {
    return new KubeApiCluster(createKubeTransport(endpoint, options));
  }

  serverVersion(): Promise<string> {
    return readServerVersion(this.transport);
  }

  discover(refresh = false): Promise<ResourceCatalog> {
    return (this.discoveryOf ?? this).sharedDiscovery(refresh, this.signal);
  }

  /**
   * Starts reading discovery ahead of the calls that will need it (the CLI connects, then
   * fetches Git): those calls wait for it, each until its own signal, and the last to give up
   * cancels it, as for any shared read. If `until` aborts before any came, it is cancelled.
   */
  prefetchDiscovery(until: AbortSignal): void {
    if (until.aborted) return;
    (this.discoveryOf ?? this).sharedRead(false).keepUntil(until);
  }

  /** The shared read of discovery, waited for until `signal` aborts. */
  private sharedDiscovery(
    refresh: boolean,
    signal: AbortSignal | undefined,
  ): Promise<ResourceCatalog> {
    // Given up already: no read is started that nobody waits for.
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return this.sharedRead(refresh).wait(signal);
  }

  /** The read of discovery under way, or a new one when there is none or `refresh` asks. */
  private sharedRead(refresh: boolean): SharedWork<ResourceCatalog> {
    if (refresh || !this.discovery) {
      const forget = (): void => {
        if (this.discovery === next) this.discovery = undefined;
      };
      // Forgotten as it is cancelled, not once its rejection arrives: a call in between (another
      // track's job) would join it and fail with the track's timeout that gave up on it.
      const next = new SharedWork(
        (cancel) => discoverResources((request) => this.transport({ ...request, signal: cancel })),
        forget,
      );
      // A failed read must not stick: the next call tries again.
      next.result.catch(forget);
      this.discovery = next;
    }
    return this.discovery;
  }

  /** The resource for apiVersion/kind; re-reads discovery once, for CRDs created moments ago. */
  private async resourceFor(
    apiVersion: string,
    kind: string,
    subject?: string,
  ): Promise<ApiResource> {
    const { group, version } = splitApiVersion(apiVersion);
    const found =
      (await this.discover()).find(group, version, kind) ??
      (await this.discover(true)).find(group, version, kind);
    if (!found) throw new UnknownResourceError(apiVersion, kind, subject);
    return found;
  }

  private static collectionPath(resource: ApiResource, namespace: string | undefined): string {
    const root = resource.group
      ? `/apis/${resource.group}/${resource.version}`
      : `/api/${resource.version}`;
    const scope =
      resource.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    return `${root}${scope}/${resource.plural}`;
  }

  private async objectPath(ref: ObjectRef): Promise<string> {
    const resource = await this.resourceFor(ref.apiVersion, ref.kind, subjectOf(ref));
    if (resource.namespaced && !ref.namespace) {
      throw new KubernetesApiError(subjectOf(ref), {
        code: 400,
        message: `${ref.kind} is namespaced but no namespace was given`,
      });
    }
    return `${KubeApiCluster.collectionPath(resource, ref.namespace)}/${encodeURIComponent(ref.name)}`;
  }

  async apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    const ref = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      namespace: object.metadata.namespace,
      name: object.metadata.name,
    };
    const response = await this.transport({
      method: 'PATCH',
      path: `${await this.objectPath(ref)}${options.subresource ? `/${options.subresource}` : ''}`,
      query: {
        fieldManager: options.fieldManager,
        force: String(options.force),
        dryRun: options.dryRun ? 'All' : undefined,
      },
      body: object,
      contentType: APPLY_PATCH,
    });
    if (response.status !== 200 && response.status !== 201) {
      throw new KubernetesApiError(subjectOf(ref), statusOf(response));
    }
    return { object: response.body as KubeObject, created: response.status === 201 };
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const response = await this.transport({ method: 'GET', path: await this.objectPath(ref) });
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new KubernetesApiError(subjectOf(ref), statusOf(response));
    return response.body as KubeObject;
  }

  async list(query: ListQuery): Promise<KubeObject[]> {
    const resource = await this.resourceFor(query.apiVersion, query.kind);
    const path = KubeApiCluster.collectionPath(resource, query.namespace);
    const items: KubeObject[] = [];
    let continueToken: string | undefined;
    do {
      const response = await this.transport({
        method: 'GET',
        path,
        query: {
          labelSelector: query.labelSelector,
          limit: LIST_PAGE_SIZE,
          continue: continueToken,
        },
        ...(query.metadataOnly ? { accept: METADATA_LIST } : {}),
      });
      if (response.status !== 200) {
        throw new KubernetesApiError(
          `${query.kind} list${query.namespace ? ` in ${query.namespace}` : ''}`,
          statusOf(response),
        );
      }
      const page = response.body as { items?: KubeObject[]; metadata?: { continue?: string } };
      for (const item of page.items ?? []) {
        // Lists leave apiVersion and kind off their items; put them back. Set on the item
        // itself, parsed for this call alone: a copy of each was garbage to collect.
        items.push(Object.assign(item, { apiVersion: query.apiVersion, kind: query.kind }));
      }
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return items;
  }

  async replaceManagedFields(
    ref: ObjectRef,
    resourceVersion: string,
    entries: readonly ManagedFieldsEntry[],
  ): Promise<void> {
    const response = await this.transport({
      method: 'PATCH',
      path: await this.objectPath(ref),
      contentType: 'application/json-patch+json',
      body: [
        // Changed since it was read: the patch fails rather than hand over fields unseen.
        { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
        { op: 'replace', path: '/metadata/managedFields', value: entries },
      ],
    });
    if (response.status !== 200) {
      throw new KubernetesApiError(subjectOf(ref), statusOf(response));
    }
  }

  async delete(ref: ObjectRef, options: DeleteOptions = {}): Promise<'deleted' | 'not-found'> {
    const response = await this.transport({
      method: 'DELETE',
      path: await this.objectPath(ref),
      query: { dryRun: options.dryRun ? 'All' : undefined },
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: options.propagationPolicy ?? 'Background',
        ...(options.preconditions ? { preconditions: options.preconditions } : {}),
      },
    });
    if (response.status === 404) return 'not-found';
    if (response.status !== 200 && response.status !== 202) {
      throw new KubernetesApiError(subjectOf(ref), statusOf(response));
    }
    return 'deleted';
  }
}

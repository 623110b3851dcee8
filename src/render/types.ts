/**
 * Types shared by the render module: what goes in (the files of one Git
 * revision) and what comes out (a validated, ordered bundle of objects).
 */

/** One file of a Git revision, as the tree reader produces it. */
export interface RevisionFile {
  /** Repository-relative path, `/`-separated, without a leading `/`. */
  readonly path: string;
  readonly content: Uint8Array;
}

/** Whether objects of a kind live in a namespace or in the cluster as a whole. */
export type ResourceScope = 'Namespaced' | 'Cluster';

/**
 * Port answering "how is this kind scoped?" for the target cluster, usually
 * backed by API discovery. `undefined` means the cluster does not serve the
 * kind. Synchronous on purpose: an adapter fetches discovery once, up front,
 * so rendering stays a pure function of its input.
 */
export type ScopeResolver = (
  group: string,
  version: string,
  kind: string,
) => ResourceScope | undefined;

/** Bounds that keep a hostile or broken revision from exhausting memory or time. */
export interface RenderLimits {
  /** Largest manifest file read, in bytes. */
  readonly maxFileBytes: number;
  /** Largest sum of the manifest files read, in bytes. */
  readonly maxTotalBytes: number;
  /**
   * Largest amount of content that YAML aliases may add across the whole
   * revision, counted as one unit per node plus one per character of scalar
   * text (roughly bytes). Bounds "billion laughs" documents.
   */
  readonly maxAliasExpansion: number;
  /** Deepest nesting of collections in a document, aliases expanded. */
  readonly maxDepth: number;
  /** Longest a renderer (kustomize, helm) may run, in milliseconds. */
  readonly rendererTimeoutMs: number;
}

/** Options of {@link renderManifests}. */
export interface RenderOptions {
  /** Directory inside the repository to read, recursively. Default: the repository root. */
  readonly subPath?: string;
  /** Namespace given to namespaced objects that name none. */
  readonly defaultNamespace?: string;
  /** Namespace given to every namespaced object, whatever it names (the track's `targetNamespace`). */
  readonly targetNamespace?: string;
  readonly scopeOf: ScopeResolver;
  readonly limits?: Partial<RenderLimits>;
}

/** Where an object was written: repository-relative file and 1-based line. */
export interface SourceLocation {
  readonly file: string;
  readonly line: number;
}

/** A JSON object, as read from a manifest. */
export type JsonObject = { [key: string]: unknown };

/** One Kubernetes object of a rendered revision. */
export interface RenderedObject {
  /** The object as written (plain JSON), with its namespace filled in or removed per its scope. */
  readonly manifest: JsonObject;
  /** API group; `''` for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly name: string;
  /** Set for namespaced objects only. */
  readonly namespace?: string;
  /** `Kind/namespace/name`, or `Kind/name` for cluster-scoped objects. */
  readonly subject: string;
  readonly source: SourceLocation;
}

/** A YAML or JSON file of the revision that was read but holds no object to apply. */
export interface SkippedFile {
  readonly file: string;
  /** e.g. `holds no Kubernetes object`. */
  readonly reason: string;
}

/** The validated objects of one revision, in canonical order (group, kind, namespace, name). */
/** How SOPS wrote a file: the `--input-type` that decrypts it. */
export type SopsFormat = 'yaml' | 'json' | 'dotenv' | 'binary';

/**
 * A SOPS-encrypted file of the revision whose ciphertexts the bundle's
 * objects hold, kept as written in Git (still encrypted). The apply step
 * decrypts it — SOPS checks its MAC — and puts each plaintext where its
 * ciphertext is (render/decrypt-bundle.ts).
 */
export interface EncryptedSource {
  readonly path: string;
  readonly format: SopsFormat;
  readonly content: string;
}

export interface RenderedBundle {
  readonly objects: readonly RenderedObject[];
  /** SOPS-encrypted files the objects take values from; see {@link EncryptedSource}. */
  readonly encryptedSources?: readonly EncryptedSource[];
  /**
   * True when the fetch step already substituted the track's `substitute:`
   * variables; the apply step must not substitute again (`$${VAR}` would be
   * expanded twice).
   */
  readonly substituted?: boolean;
  /** Plain manifests only: files skipped because they hold no object, in path order. */
  readonly skipped?: readonly SkippedFile[];
  /**
   * Helm charts only: digest of the cluster capabilities the chart was
   * rendered for (`none` when none were known). The apply side renders again
   * when its cluster's differ.
   */
  readonly capabilities?: string;
}

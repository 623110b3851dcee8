import { DriftlessError } from '../errors.ts';
import type { SourceLocation } from './types.ts';

/** Prefix every render message with `file:line: ` so people can jump to the cause. */
function at(file: string, line: number | undefined): string {
  return line === undefined ? `${file}: ` : `${file}:${line}: `;
}

/**
 * A manifest file is not valid YAML/JSON: syntax, duplicate keys, unknown
 * tags, invalid UTF-8, too deep nesting.
 */
export class ManifestParseError extends DriftlessError {
  readonly code = 'RENDER_PARSE';

  constructor(
    readonly file: string,
    readonly line: number,
    readonly column: number,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${file}:${line}:${column}: ${reason}`, options);
  }
}

/** A document parsed but is not a valid Kubernetes object (missing or malformed field). */
export class InvalidManifestError extends DriftlessError {
  readonly code = 'RENDER_INVALID';

  constructor(
    readonly file: string,
    readonly line: number,
    /** The object's subject when it has one far enough to name. */
    readonly subject: string | undefined,
    reason: string,
  ) {
    super(`${at(file, line)}${subject === undefined ? '' : `${subject}: `}${reason}`);
  }
}

/** Neither the cluster nor a CustomResourceDefinition in the revision serves the object's kind. */
export class UnknownResourceError extends DriftlessError {
  readonly code = 'RENDER_UNKNOWN_RESOURCE';

  constructor(
    readonly file: string,
    readonly line: number,
    readonly subject: string,
    readonly apiVersion: string,
    readonly kind: string,
    hint: string,
  ) {
    super(`${at(file, line)}${subject}: no API resource for ${apiVersion} ${kind}; ${hint}`);
  }
}

/** A namespaced object names no namespace and the track gives no default one. */
export class MissingNamespaceError extends DriftlessError {
  readonly code = 'RENDER_NO_NAMESPACE';

  constructor(
    readonly file: string,
    readonly line: number,
    readonly subject: string,
  ) {
    super(
      `${at(file, line)}${subject}: namespaced object has no metadata.namespace and no default namespace is set`,
    );
  }
}

/** Two objects of the revision share group, kind, namespace and name. */
export class DuplicateObjectError extends DriftlessError {
  readonly code = 'RENDER_DUPLICATE';

  constructor(
    readonly subject: string,
    readonly first: SourceLocation,
    readonly second: SourceLocation,
  ) {
    super(
      `${at(second.file, second.line)}${subject}: duplicate object, also defined at ${first.file}:${first.line}`,
    );
  }
}

/** A file, the revision, or alias expansion exceeds a {@link RenderLimits} bound. */
export class ManifestTooLargeError extends DriftlessError {
  readonly code = 'RENDER_TOO_LARGE';

  constructor(
    readonly file: string,
    /** Absent when the limit concerns the whole file. */
    readonly line: number | undefined,
    /** Name of the exceeded limit, e.g. `maxFileBytes`. */
    readonly limit: string,
    reason: string,
  ) {
    super(`${at(file, line)}${reason}`);
  }
}

/** The render call itself is malformed: a bad subPath, or a subPath missing from the revision. */
export class RenderInputError extends DriftlessError {
  readonly code = 'RENDER_INPUT';
}

/** A serialized bundle (e.g. read back from the artifact store) is malformed or was altered. */
export class InvalidBundleError extends DriftlessError {
  readonly code = 'RENDER_BUNDLE_INVALID';
}

/** A renderer binary (kustomize, helm) the track needs cannot be found. */
export class RendererNotFoundError extends DriftlessError {
  readonly code = 'RENDER_TOOL_MISSING';
}

/** A renderer ran and failed; the message is its own, with temporary paths made repository-relative. */
export class RendererFailedError extends DriftlessError {
  readonly code = 'RENDER_TOOL_FAILED';

  constructor(
    /** What ran, e.g. `kustomize build deploy/prod`. */
    readonly tool: string,
    reason: string,
  ) {
    super(`${tool}: ${reason}`);
  }
}

/** A renderer ran past its time or output limit and was stopped. */
export class RendererLimitError extends DriftlessError {
  readonly code = 'RENDER_TOOL_LIMIT';

  constructor(
    readonly tool: string,
    reason: string,
  ) {
    super(`${tool}: ${reason}`);
  }
}

/**
 * The revision asks a renderer for something Driftless refuses by default: a
 * file outside the repository, a remote resource without opt-in, a plugin.
 */
export class RenderRefusedError extends DriftlessError {
  readonly code = 'RENDER_REFUSED';

  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}`);
  }
}

/** A SOPS file could not be decrypted (no key, wrong key, tampered MAC); names the file, never a value. */
export class DecryptionError extends DriftlessError {
  readonly code = 'DecryptionFailed';
}

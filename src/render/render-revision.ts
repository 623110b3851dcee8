/**
 * Renders one revision of a track, whichever renderer it needs:
 *
 * - `helm:` set -> `helm template` of the chart;
 * - a kustomization at subPath (`kustomize: auto`, the default) or
 *   `kustomize: true` -> `kustomize build`;
 * - otherwise the plain manifests under subPath.
 *
 * Files the track's `sourceIgnore` and the revision's `.sourceignore` files
 * exclude are left out first, whichever renderer runs. SOPS values stay
 * encrypted; `substitute:` variables are substituted here when they can be
 * (substitute-bundle.ts).
 *
 * Runs on the fetch side, without cluster credentials: objects keep the
 * namespace their renderer gave them, and the apply side places them
 * ({@link placeBundle}). Errors name the file (or the renderer's own message,
 * which names the file) and nothing partial is returned.
 */
import type { Track } from '../config/types.ts';
import { InvalidManifestError, RenderInputError } from './errors.ts';
import { capabilitiesDigest, type ClusterCapabilities } from './capabilities.ts';
import { helmTemplate } from './helm.ts';
import { kustomizationIn, kustomizeBuild, KUSTOMIZATION_FILES } from './kustomize.ts';
import { resolveLimits } from './limits.ts';
import { parseRendererOutput, parseRevision } from './render-manifests.ts';
import { rendererBinary } from './renderer-binaries.ts';
import { isJsonObject } from './json-value.ts';
import { normalizeSubPath, selectManifestFiles } from './select-manifest-files.ts';
import {
  encryptedSourcesOf,
  holdsCiphertext,
  isCiphertext,
  revisionHoldsCiphertext,
} from './sops-sources.ts';
import { applySourceIgnore } from './source-ignore.ts';
import { substituteBundle, substitutesAtRender } from './substitute-bundle.ts';
import type { RenderedBundle, RenderLimits, RevisionFile, SourceLocation } from './types.ts';

/** The track fields that decide how a revision renders. */
export type RenderSpec = Pick<
  Track,
  | 'name'
  | 'subPath'
  | 'namespace'
  | 'kustomize'
  | 'kustomizeRemoteResources'
  | 'helm'
  | 'sourceIgnore'
> &
  Partial<Pick<Track, 'substitute' | 'substituteFrom' | 'decryption'>>;

export interface RevisionRenderOptions {
  /** What the target cluster serves, when the apply step has recorded it (Helm's `.Capabilities`). */
  readonly capabilities?: ClusterCapabilities;
  readonly limits?: Partial<RenderLimits>;
  /** Where renderer binaries are looked up (DRIFTLESS_KUSTOMIZE, DRIFTLESS_HELM, PATH). */
  readonly env?: NodeJS.ProcessEnv;
  /** Aborted when the caller is asked to stop: a running renderer is killed (run-tool.ts). */
  readonly signal?: AbortSignal;
}

/** Which renderer a track's revision needs. */
export type RendererKind = 'plain' | 'kustomize' | 'helm';

/** Decides the renderer; throws when `kustomize: true` finds no kustomization. */
export function rendererOf(spec: RenderSpec, files: readonly RevisionFile[]): RendererKind {
  if (spec.helm !== undefined) return 'helm';
  if (spec.kustomize === false) return 'plain';
  const dir = normalizeSubPath(spec.subPath);
  if (kustomizationIn(files, dir)) return 'kustomize';
  if (spec.kustomize === true) {
    throw new RenderInputError(
      `kustomize: true, but ${dir === '' ? 'the repository root' : dir} has no ${KUSTOMIZATION_FILES.join(', ')}`,
    );
  }
  return 'plain';
}

/** `# Source: <chart>/templates/x.yaml` comments, by line, as helm prints them before each document. */
function helmSources(text: string): { line: number; path: string }[] {
  const sources: { line: number; path: string }[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.startsWith('# Source: '))
      sources.push({ line: index + 1, path: line.slice(10).trim() });
  });
  return sources;
}

/** Renders `files` (one revision) for the track; see the module comment. */
export async function renderRevision(
  spec: RenderSpec,
  revisionFiles: readonly RevisionFile[],
  options: RevisionRenderOptions = {},
): Promise<RenderedBundle> {
  const files = applySourceIgnore(revisionFiles, spec.sourceIgnore);
  return finishBundle(spec, files, await renderFiles(spec, files, options));
}

/**
 * What follows any renderer: the SOPS-encrypted files the objects take values
 * from are kept (still encrypted) for the apply step (sops-sources.ts), and
 * `substitute:` variables are substituted when nothing else is needed
 * (substitute-bundle.ts).
 */
function finishBundle(
  spec: RenderSpec,
  files: readonly RevisionFile[],
  rendered: RenderedBundle,
): RenderedBundle {
  let bundle = rendered;
  if (revisionHoldsCiphertext(files)) {
    const sources = encryptedSourcesOf(files, bundle.objects, {
      decryption: spec.decryption !== undefined,
      trackName: spec.name,
    });
    if (sources.length > 0) bundle = { ...bundle, encryptedSources: sources };
  }
  return substitutesAtRender(spec, bundle)
    ? substituteBundle(bundle, spec.substitute ?? {})
    : bundle;
}

// A top-level `apiVersion:` or `kind:` that is a SOPS ciphertext, as sops
// writes YAML and kustomize and helm print it (top-level keys at column 0).
const ENCRYPTED_IDENTITY = /^(?:apiVersion|kind):[ \t]*(ENC\[AES256_GCM,[^\]\s]*\])/m;
const IDENTITY_FIELDS = ['apiVersion', 'kind', 'metadata'] as const;

/** The ciphertext standing for a top-level apiVersion or kind of `text` (YAML, or a JSON object). */
function encryptedIdentity(text: string): string | undefined {
  if (!holdsCiphertext(text)) return undefined;
  const yaml = ENCRYPTED_IDENTITY.exec(text);
  if (yaml) return yaml[1];
  const json = jsonObject(text);
  return [json?.apiVersion, json?.kind].find(
    (value): value is string => typeof value === 'string' && isCiphertext(value),
  );
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined; // not JSON: YAML, or broken, which the parser reports
  }
}

/** Which of apiVersion, kind and metadata hold a ciphertext, in the document of `text` holding `ciphertext`. */
function encryptedFields(text: string, ciphertext: string): string[] {
  const json = jsonObject(text);
  if (json)
    return IDENTITY_FIELDS.filter((field) => holdsCiphertext(JSON.stringify(json[field] ?? '')));
  const document = text.split(/^---/m).find((part) => part.includes(ciphertext)) ?? text;
  return IDENTITY_FIELDS.filter((field) =>
    // The field's line and the indented lines under it.
    new RegExp(`^${field}:.*(?:\\n[ \\t-].*)*`, 'm')
      .exec(document)?.[0]
      .includes('ENC[AES256_GCM,'),
  );
}

/**
 * Refuses a document whose apiVersion or kind is a SOPS ciphertext: a file
 * `sops encrypt` encrypted whole, not only its values. Only the apply step
 * decrypts, and what an object is must be known before that (its scope,
 * order, owner), so it would fail later as a kind called `ENC[...]`, or as a
 * malformed apiVersion. `text` is a manifest file (`file`) or a renderer's
 * output; the file named is the one holding the ciphertext when the
 * revision has it, not the kustomization that pulled it in.
 */
function refuseEncryptedIdentity(files: readonly RevisionFile[], text: string, file: string): void {
  const ciphertext = encryptedIdentity(text);
  if (ciphertext === undefined) return;
  const where = ciphertextLocation(files, ciphertext) ?? {
    file,
    line: lineOf(text, text.indexOf(ciphertext)),
    text,
  };
  const fields = encryptedFields(where.text, ciphertext);
  const listed =
    fields.length === 1 ? fields[0] : `${fields.slice(0, -1).join(', ')} and ${fields.at(-1)}`;
  throw new InvalidManifestError(
    where.file,
    where.line,
    undefined,
    `${listed} ${fields.length === 1 ? 'is' : 'are'} encrypted by SOPS; Driftless needs apiVersion, kind and metadata readable to know which object this is before it decrypts anything. Encrypt only the values, e.g. sops encrypt --encrypted-regex '^(data|stringData)$'`,
  );
}

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/** The file, line and text holding `ciphertext` (each SOPS value is unique: a fresh IV). */
function ciphertextLocation(
  files: readonly RevisionFile[],
  ciphertext: string,
): (SourceLocation & { text: string }) | undefined {
  const needle = Buffer.from(ciphertext);
  for (const file of files) {
    const content = Buffer.from(
      file.content.buffer,
      file.content.byteOffset,
      file.content.byteLength,
    );
    const offset = content.indexOf(needle);
    if (offset < 0) continue;
    const text = content.toString('utf8');
    return { file: file.path, line: lineOf(text, text.indexOf(ciphertext)), text };
  }
  return undefined;
}

async function renderFiles(
  spec: RenderSpec,
  files: readonly RevisionFile[],
  options: RevisionRenderOptions,
): Promise<RenderedBundle> {
  const limits = resolveLimits(options.limits);
  const dir = normalizeSubPath(spec.subPath);
  const renderer = rendererOf(spec, files);
  const run = {
    timeoutMs: limits.rendererTimeoutMs,
    maxOutputBytes: limits.maxTotalBytes,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const why = `track ${spec.name}`;

  // Before parsing: an encrypted apiVersion may not even parse as one.
  const refuseEncrypted = revisionHoldsCiphertext(files)
    ? (content: Uint8Array, file: string) =>
        refuseEncryptedIdentity(files, new TextDecoder().decode(content), file)
    : () => {};

  if (renderer === 'plain') {
    for (const file of selectManifestFiles(files, spec.subPath))
      refuseEncrypted(file.content, file.path);
    return parseRevision(files, { ...(spec.subPath ? { subPath: spec.subPath } : {}), limits });
  }

  if (renderer === 'kustomize') {
    const output = await kustomizeBuild(files, {
      ...run,
      binary: rendererBinary(
        'kustomize',
        `${why} (${kustomizationIn(files, dir)?.path ?? 'kustomize: true'})`,
        options.env,
      ),
      dir,
      allowRemote: spec.kustomizeRemoteResources,
    });
    const file = kustomizationIn(files, dir)?.path ?? dir;
    refuseEncrypted(output, file);
    return parseRendererOutput({ path: file, content: output }, (line) => ({ file, line }), {
      limits,
    });
  }

  const chart = spec.helm!;
  const helm = await helmTemplate(files, {
    ...run,
    binary: rendererBinary('helm', `${why} (helm.chart ${chart.chart})`, options.env),
    chart,
    releaseName: chart.releaseName ?? spec.name,
    dir,
    ...(spec.namespace ? { namespace: spec.namespace } : {}),
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
  });
  refuseEncrypted(helm.output, helm.chartLabel);
  const sources = helmSources(helm.output.toString('utf8'));
  const sourceOf = (line: number): SourceLocation => {
    let found: string | undefined;
    for (const source of sources) if (source.line < line) found = source.path;
    // The line inside the template is not known once rendered: the file is what helps.
    return { file: found === undefined ? helm.chartLabel : helm.sourceFile(found), line: 1 };
  };
  const bundle = parseRendererOutput({ path: helm.chartLabel, content: helm.output }, sourceOf, {
    limits,
  });
  return { ...bundle, capabilities: capabilitiesDigest(options.capabilities) };
}

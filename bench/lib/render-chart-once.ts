/**
 * One `helm:` render in a fresh Node process, timed inside it: the first
 * render a process makes, with V8 not yet warmed up by earlier ones (the
 * CLI's `driftless render`, a cold fetch function). Module loading is not
 * counted. Run by bench/render.ts: `node --import tsx render-chart-once.ts
 * <chart-root>`, with DRIFTLESS_HELM set; prints the milliseconds.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { renderRevision, serializeBundle } from '../../src/render/index.ts';
import type { RenderSpec } from '../../src/render/render-revision.ts';

const root = process.argv[2];
if (root === undefined) throw new Error('usage: render-chart-once.ts <directory holding chart/>');
const paths = (await readdir(root, { recursive: true, withFileTypes: true }))
  .filter((entry) => entry.isFile())
  .map((entry) => join(entry.parentPath, entry.name));
const files = await Promise.all(
  paths.map(async (path) => ({ path: relative(root, path), content: await readFile(path) })),
);
const spec: RenderSpec = {
  name: 'bench',
  namespace: 'bench',
  kustomize: 'auto',
  kustomizeRemoteResources: false,
  helm: { chart: 'chart', values: {}, valuesFiles: [] },
};
const start = performance.now();
const bytes = serializeBundle(await renderRevision(spec, files));
const ms = performance.now() - start;
if (bytes.byteLength === 0) throw new Error('the render produced nothing');
process.stdout.write(`${ms}\n`);

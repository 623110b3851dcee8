/**
 * Builds the dashboard's web UI (web/) into `dist/web/`: `index.html` and
 * its script and stylesheet under `assets/`, named by content hash (the
 * server caches them for a year, and a new build has new names). The page
 * references them by relative URLs, so it works under any path prefix.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Where `npm run build` writes the UI; serve and the dashboard function read it. */
export const WEB_DIST_DIR = join(REPO_ROOT, 'dist', 'web');

/**
 * Bundles web/main.ts and web/styles.css into `outDir` (emptied first) and
 * writes index.html from web/index.html; returns the files written, relative
 * to `outDir` (`index.html`, `assets/app-<hash>.js`, `assets/app-<hash>.css`).
 */
export async function buildWeb(outDir: string = WEB_DIST_DIR): Promise<string[]> {
  // Hashed names: the assets of an earlier build would linger.
  await rm(outDir, { recursive: true, force: true });
  const assetsDir = join(outDir, 'assets');
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: [
      { in: 'web/main.ts', out: 'app' },
      { in: 'web/styles.css', out: 'app' },
    ],
    outdir: assetsDir,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Browsers with native <dialog>, ES2022 and CSS custom properties: the last two years' releases.
    target: ['es2022', 'chrome111', 'firefox115', 'safari16.4'],
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  const written = Object.keys(result.metafile.outputs).map((path) =>
    relative(outDir, join(REPO_ROOT, path)),
  );
  const assetNamed = (extension: string): string => {
    const found = written.find((path) => path.endsWith(extension));
    if (found === undefined) throw new Error(`the web build wrote no ${extension} file`);
    // Relative, and with / on every platform: it is a URL.
    return `assets/${basename(found)}`;
  };
  const template = await readFile(join(REPO_ROOT, 'web', 'index.html'), 'utf8');
  const html = template
    .replace('{{app.js}}', assetNamed('.js'))
    .replace('{{app.css}}', assetNamed('.css'));
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'index.html'), html);
  return ['index.html', ...written.map((path) => path.split('\\').join('/'))];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = await buildWeb();
  console.error(`dist/web: ${files.join(', ')}`);
}

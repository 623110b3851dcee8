/**
 * The dashboard's web UI (`npm run build` → dist/web/): index.html points at
 * the hashed assets it was built with, by relative URLs; the first load stays
 * far under 200 KB compressed; and the browser code keeps to its rules —
 * API data never becomes markup, and nothing of src/ but the API's types.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { buildWeb } from '../../scripts/build-web.ts';

const WEB_SOURCE = fileURLToPath(new URL('../../web/', import.meta.url));

/** The first load: the page, its script and its stylesheet. */
const FIRST_LOAD_LIMIT_BYTES = 200 * 1024;

async function webSources(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(WEB_SOURCE)).filter((name) => name.endsWith('.ts'));
  assert.ok(names.includes('main.ts'), 'web/main.ts exists');
  return Promise.all(
    names.map(async (name) => ({ name, text: await readFile(join(WEB_SOURCE, name), 'utf8') })),
  );
}

describe('the dashboard web UI build', () => {
  let dir: string;
  let files: string[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-web-build-'));
    files = await buildWeb(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('writes index.html referencing the hashed assets it wrote, by relative URLs', async () => {
    assert.ok(files.includes('index.html'));
    const html = await readFile(join(dir, 'index.html'), 'utf8');
    const script = /<script type="module" src="(assets\/app-[A-Z0-9]+\.js)"><\/script>/.exec(html);
    const style = /<link rel="stylesheet" href="(assets\/app-[A-Z0-9]+\.css)" \/>/.exec(html);
    assert.ok(script, `index.html loads assets/app-<hash>.js:\n${html}`);
    assert.ok(style, `index.html loads assets/app-<hash>.css:\n${html}`);
    for (const asset of [script[1]!, style[1]!]) {
      assert.ok(files.includes(asset), `${asset} is among the files written: ${files.join(', ')}`);
      await readFile(join(dir, asset));
    }
    assert.match(html, /<html lang="en">/);
    assert.doesNotMatch(html, /\{\{/, 'no placeholder is left');
    // Nothing inline: the page's Content-Security-Policy allows only its own files.
    assert.doesNotMatch(html, /<script>|<style|style="/);
  });

  it('keeps the first load far under 200 KB compressed', async (t) => {
    let total = 0;
    for (const file of files) total += gzipSync(await readFile(join(dir, file))).length;
    t.diagnostic(`first load: ${(total / 1024).toFixed(1)} KB gzip (${files.join(', ')})`);
    assert.ok(total < FIRST_LOAD_LIMIT_BYTES, `${total} bytes gzip`);
  });

  it('never turns text into markup in web/', async () => {
    for (const { name, text } of await webSources()) {
      assert.doesNotMatch(
        text,
        /\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|createContextualFragment/,
        `web/${name} sets markup from strings: use textContent (dom.ts h())`,
      );
    }
  });

  it('imports nothing from src/ at run time: only the API types, with import type', async () => {
    for (const { name, text } of await webSources()) {
      const fromSrc = [
        ...text.matchAll(/^(import|export)\b([^;]*?)from\s+'(\.\.\/)+src\/([^']+)'/gms),
      ];
      for (const [statement, , clause, , path] of fromSrc) {
        assert.match(clause!, /^\s+type\b/, `web/${name}: "${statement}" must be import type`);
        assert.equal(path, 'dashboard/types.ts', `web/${name}: "${statement}"`);
      }
      assert.doesNotMatch(
        text,
        /import\(\s*'(\.\.\/)+src\//,
        `web/${name} imports src/ dynamically`,
      );
    }
  });
});

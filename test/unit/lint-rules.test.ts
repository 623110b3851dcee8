/**
 * The dependency rules of docs/architecture.md are lint errors: each is tried
 * here with the project's own eslint.config.js, on code that breaks it
 * (imported at once and lazily) and on code that keeps it.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The messages of the rules that `code`, as the file `filePath`, breaks. */
async function broken(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
}

describe('dependency rules (eslint.config.js)', () => {
  it('refuse an import of cli/ from the core, at once or lazily', async () => {
    const atOnce = await broken('src/sync/zz.ts', "export { x } from '../cli/main.ts';\n");
    const lazily = await broken(
      'src/sync/zz.ts',
      "export const x = () => import('../cli/main.ts');\n",
    );
    assert.match(atOnce.join('\n'), /src\/sync may not import .*src\/cli/);
    assert.match(lazily.join('\n'), /src\/sync may not import .*src\/cli/);
  });

  it('refuse serve and aws importing each other or cli', async () => {
    assert.notDeepEqual(await broken('src/serve/zz.ts', "export { x } from '../aws/x.ts';\n"), []);
    assert.notDeepEqual(await broken('src/aws/zz.ts', "export { x } from '../serve/x.ts';\n"), []);
    assert.notDeepEqual(await broken('src/aws/zz.ts', "export { x } from '../cli/x.ts';\n"), []);
  });

  it('refuse a handler importing cli/ or serve/, at once or lazily; src/aws is allowed', async () => {
    const atOnce = await broken('handlers/zz.ts', "export { x } from '../src/serve/x.ts';\n");
    const lazily = await broken(
      'handlers/zz.ts',
      "export const x = () => import('../src/cli/main.ts');\n",
    );
    const allowed = await broken(
      'handlers/zz.ts',
      "export const x = () => import('../src/aws/parse-job.ts');\n",
    );
    assert.match(atOnce.join('\n'), /handlers\/ import src\/aws and the core only/);
    assert.match(lazily.join('\n'), /handlers\/ import src\/aws and the core only/);
    assert.deepEqual(allowed, []);
  });

  it('let the core import what sits below it', async () => {
    assert.deepEqual(await broken('src/sync/zz.ts', "export { x } from '../apply/x.ts';\n"), []);
  });
});

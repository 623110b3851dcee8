import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { REPO_ROOT } from '../harness/testbin.ts';

const run = promisify(execFile);

/** The version a wrapper module pins, read from its go.mod. */
async function pinned(wrapper: string, module: string): Promise<string> {
  const goMod = await readFile(join(REPO_ROOT, 'infra/renderers', wrapper, 'go.mod'), 'utf8');
  const version = new RegExp(`^\\s*${module.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(goMod)?.[1];
  assert.ok(version, `${wrapper}/go.mod pins ${module}`);
  return version;
}

describe('rendererBinaries', () => {
  let fakes: string;

  before(async () => {
    fakes = await mkdtemp(join(tmpdir(), 'driftless-renderers-'));
    for (const name of ['kustomize', 'helm', 'sops']) {
      await writeFile(join(fakes, name), '#!/bin/sh\n');
      await chmod(join(fakes, name), 0o755);
    }
  });

  after(() => rm(fakes, { recursive: true, force: true }));

  it('uses DRIFTLESS_KUSTOMIZE, DRIFTLESS_HELM and DRIFTLESS_SOPS when set, and builds nothing', async () => {
    // Act
    const binaries = await rendererBinaries({
      DRIFTLESS_KUSTOMIZE: join(fakes, 'kustomize'),
      DRIFTLESS_HELM: join(fakes, 'helm'),
      DRIFTLESS_SOPS: join(fakes, 'sops'),
    });

    // Assess
    assert.deepEqual(binaries, {
      kustomize: join(fakes, 'kustomize'),
      helm: join(fakes, 'helm'),
      sops: join(fakes, 'sops'),
    });
    assert.deepEqual(rendererEnvironment(binaries), {
      DRIFTLESS_KUSTOMIZE: join(fakes, 'kustomize'),
      DRIFTLESS_HELM: join(fakes, 'helm'),
      DRIFTLESS_SOPS: join(fakes, 'sops'),
    });
  });

  it('refuses a variable that names no executable', async () => {
    await assert.rejects(
      rendererBinaries({
        DRIFTLESS_KUSTOMIZE: join(fakes, 'kustomize'),
        DRIFTLESS_HELM: join(fakes, 'missing'),
      }),
      /DRIFTLESS_HELM=.*is not an executable file/,
    );
  });

  it(
    'builds the pinned kustomize, helm and sops for this host, which report their pinned versions',
    {
      timeout: 20 * 60_000,
    },
    async () => {
      // Act: the first build takes minutes; later runs find the cache.
      const binaries = await rendererBinaries({});
      const kustomize = await run(binaries.kustomize, ['version']);
      const helm = await run(binaries.helm, ['version', '--template', '{{.Version}}']);
      // sops asks GitHub for its newest version unless told not to; nothing here reaches GitHub.
      const sops = await run(binaries.sops, ['--version', '--disable-version-check']);

      // Assess
      assert.ok(isAbsolute(binaries.kustomize) && isAbsolute(binaries.helm));
      assert.equal(
        kustomize.stdout.trim(),
        await pinned('kustomize', 'sigs.k8s.io/kustomize/kustomize/v5'),
      );
      assert.equal(helm.stdout.trim(), await pinned('helm', 'helm.sh/helm/v4'));
      assert.equal(
        sops.stdout.trim().split('\n')[0],
        `sops ${(await pinned('sops', 'github.com/getsops/sops/v3')).slice(1)}`,
      );
    },
  );
});

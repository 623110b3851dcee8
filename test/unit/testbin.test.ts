import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controlPlaneBinaries } from '../harness/testbin.ts';

describe('controlPlaneBinaries', () => {
  let assets: string;

  before(async () => {
    assets = await mkdtemp(join(tmpdir(), 'driftless-assets-'));
    for (const name of ['kube-apiserver', 'etcd', 'kubectl', 'kube-controller-manager']) {
      await writeFile(join(assets, name), '#!/bin/sh\n');
      await chmod(join(assets, name), 0o755);
    }
  });

  after(() => rm(assets, { recursive: true, force: true }));

  it('uses the binaries of KUBEBUILDER_ASSETS and builds nothing', async () => {
    // Act: a missing Go toolchain would fail any build attempt.
    const binaries = await controlPlaneBinaries({
      KUBEBUILDER_ASSETS: assets,
      PATH: '/nonexistent',
    });

    // Assess
    assert.deepEqual(binaries, {
      kubeApiserver: join(assets, 'kube-apiserver'),
      etcd: join(assets, 'etcd'),
      kubeControllerManager: join(assets, 'kube-controller-manager'),
      kubectl: join(assets, 'kubectl'),
    });
  });

  it('lets TEST_ASSET_<NAME> point at one binary, over KUBEBUILDER_ASSETS', async () => {
    // Prepare
    const etcd = join(assets, 'etcd');

    // Act
    const binaries = await controlPlaneBinaries({
      KUBEBUILDER_ASSETS: assets,
      TEST_ASSET_ETCD: etcd,
      TEST_ASSET_KUBE_APISERVER: join(assets, 'kubectl'),
    });

    // Assess
    assert.equal(binaries.etcd, etcd);
    assert.equal(binaries.kubeApiserver, join(assets, 'kubectl'));
  });

  it('refuses a TEST_ASSET_ variable that names no executable', async () => {
    await assert.rejects(
      controlPlaneBinaries({
        KUBEBUILDER_ASSETS: assets,
        TEST_ASSET_ETCD: join(assets, 'missing'),
      }),
      /TEST_ASSET_ETCD=.*is not an executable file/,
    );
  });
});

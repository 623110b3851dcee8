/**
 * Faults of the infrastructure under a running sync job (issue 18): the
 * kube-apiserver of a test cluster of this file's own killed mid-apply, and
 * MinIO (the S3 store) killed mid-sync. One trial each here;
 * `npm run bench -- faults` runs ten or more and prints the table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { S3Store } from '../../src/store/s3-store.ts';
import { startTestCluster, type TestCluster } from '../harness/cluster.ts';
import { startGitServer, type GitServer } from '../harness/git-server.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import { apiServerKillTrial, scratchDir, storeFaultTrial } from '../harness/fault-trials.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';

describe('infrastructure faults', () => {
  let git: GitServer;
  let workDir: string;
  let removeScratch: () => Promise<void>;

  before(async () => {
    const scratch = await scratchDir();
    workDir = scratch.dir;
    removeScratch = scratch.remove;
    git = await startGitServer();
  });

  after(async () => {
    await git?.stop();
    await removeScratch?.();
  });

  describe('kube-apiserver killed mid-apply', () => {
    let cluster: TestCluster;

    before(async () => {
      // A cluster of this file's own: killing the shared one would fail other files' tests.
      cluster = await startTestCluster();
    });

    after(async () => {
      await cluster?.stop();
    });

    it('fails the job without pruning, then the redelivered job converges', async () => {
      // Prepare: the trial applies revision 1 and queues revision 2's sync job.
      const world = { git, kubeconfigPath: cluster.kubeconfigPath, workDir };

      // Act
      const seen = await apiServerKillTrial(world, cluster);

      // Assess
      assert.equal(seen.during, 'failed', seen.error);
      assert.ok(seen.appliedAfterFault, 'revision 1 stays the applied one');
      assert.ok(seen.notPrunedOnFailure, 'nothing is pruned unless everything applied');
      assert.equal(seen.retry, 'applied');
      assert.ok(seen.after.converged, JSON.stringify(seen.after));
    });
  });

  describe('S3 (MinIO) killed mid-sync', () => {
    let minio: MinioServer;
    let bucket: string;

    before(async () => {
      minio = await startMinio();
      bucket = await minio.createBucket();
    });

    after(async () => {
      await minio?.stop();
    });

    it('fails retryably with the state whole, and the redelivered job completes', async () => {
      // Prepare
      const store = new S3Store({
        bucket,
        prefix: 'faults/',
        client: minio.client(),
        kmsKeyId: minio.kmsKeyName,
      });
      const world = { git, kubeconfigPath: sharedKubeconfigPath(), workDir };

      // Act
      const seen = await storeFaultTrial(world, store, minio);

      // Assess
      assert.equal(seen.during, 'STORE_UNAVAILABLE', seen.error);
      assert.ok(seen.stateReadable);
      assert.ok(seen.appliedAfterFault, 'the state still says revision 1');
      assert.equal(seen.historyOfFailedJob, 0, 'no history entry of the unrecorded job');
      // The attempt that died could not give its lease back: a retry waits for it to expire.
      assert.equal(seen.retryAtOnce, 'TRACK_BUSY');
      assert.ok(['applied', 'unchanged'].includes(seen.redelivered), seen.redelivered);
      assert.ok(seen.recordedAfterRedelivery, 'the state says revision 2 is applied');
      assert.ok(seen.after.converged, JSON.stringify(seen.after));
    });
  });
});

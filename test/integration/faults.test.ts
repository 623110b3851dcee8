/**
 * Faults on real parts (issue 18), a few trials each; bench/faults.ts runs
 * ten or more of each and prints the table (`npm run bench -- faults`):
 * the Git host failing (500, hanging, closing mid-pack) behind a fault
 * proxy, an apply process killed with SIGKILL while it holds the lease,
 * duplicate and late queue deliveries, and clock skew between functions.
 * Every trial ends with the cluster holding exactly Git's last revision and
 * an unmanaged bystander object untouched. The API server and S3 faults are
 * in faults-infra.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGitServer } from '../harness/git-server.ts';
import {
  deliveryTrial,
  gitFaultTrial,
  killedApplyTrial,
  leaseSkewTrial,
  resolvedAtSkewTrial,
  scratchDir,
  type FaultWorld,
} from '../harness/fault-trials.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';

describe('faults', () => {
  let world: FaultWorld;
  let removeScratch: () => Promise<void>;

  before(async () => {
    const scratch = await scratchDir();
    removeScratch = scratch.remove;
    world = {
      git: await startGitServer(),
      kubeconfigPath: sharedKubeconfigPath(),
      workDir: scratch.dir,
    };
  });

  after(async () => {
    await world?.git.stop();
    await removeScratch?.();
  });

  for (const fault of ['status500', 'hang', 'closeMidPack'] as const) {
    it(`keeps the last good revision while the Git host fails (${fault}), then converges`, async () => {
      // Prepare: the trial applies revision 1, pushes revision 2 and turns the fault on; a hang
      // is given up after 2 s here (60 s by default).

      // Act
      const seen = await gitFaultTrial(
        world,
        fault,
        fault === 'hang' ? { idleTimeoutMs: 2_000 } : {},
      );

      // Assess
      assert.equal(seen.outcome, 'failed');
      assert.equal(seen.reason, 'GIT_FETCH_FAILED');
      const expected = {
        status500: /answered HTTP 500/,
        hang: /timed out/,
        closeMidPack: /aborted|socket hang up|ECONNRESET/,
      }[fault];
      assert.match(seen.message ?? '', expected);
      assert.ok(seen.lastGoodKept, 'revision 1 stays applied and in the cluster');
      assert.ok(seen.after.converged, JSON.stringify(seen.after));
      assert.ok(Number.isFinite(seen.convergeMs), 'the next fetch applied revision 2');
    });
  }

  it('waits for a slow Git host that stays silent for 6 s before the pack', async () => {
    // Prepare: the default idle timeout; Node's global agent alone gave up after 5 s.

    // Act
    const seen = await gitFaultTrial(world, 'stall', { stallMs: 6_000 });

    // Assess
    assert.equal(seen.outcome, 'applied', seen.message);
    assert.ok(seen.after.converged, JSON.stringify(seen.after));
  });

  it('lets the next job complete once the lease of a killed apply process expired', async () => {
    // Prepare: revision 1 applied; a child process applying revision 2 is killed mid-apply.

    // Act
    const seen = await killedApplyTrial(world);

    // Assess
    assert.ok(seen.appliedWhenKilled >= 1 && seen.appliedWhenKilled < 120, JSON.stringify(seen));
    assert.ok(seen.leaseLeft, 'the killed process could not give the lease back');
    assert.equal(seen.beforeExpiry, 'TRACK_BUSY');
    assert.equal(seen.afterExpiry, 'applied');
    assert.deepEqual(seen.after.lost, []);
    assert.equal(seen.after.bystanderTouched, false);
    assert.deepEqual(seen.after.leftBehind, [], 'what the killed job created is pruned too');
  });

  it('applies the newest revision once through duplicate and late deliveries', async () => {
    // Prepare: two revisions fetched; the trial delivers their sync jobs out of order.

    // Act
    const seen = await deliveryTrial(world);

    // Assess
    assert.deepEqual([...seen.results.slice(0, 2)].sort(), ['TRACK_BUSY', 'applied']);
    assert.deepEqual(seen.results.slice(2), [
      'unchanged',
      'superseded',
      'superseded',
      'newer:applied',
    ]);
    assert.equal(seen.lateFetch, 'stale', 'a fetch resolved earlier never replaces a later one');
    assert.equal(seen.olderAppliedAfterNewer, 0);
    assert.equal(seen.appliedRevision, seen.newest);
    assert.ok(seen.after.converged, JSON.stringify(seen.after));
  });

  it('orders fetches by resolution when the skew is below the gap between them', async () => {
    // Prepare: function A's clock runs 2 s ahead; B resolves the newer commit 5 s later.

    // Act
    const seen = await resolvedAtSkewTrial(world, 2_000, 5_000);

    // Assess
    assert.equal(seen.newerFetch, 'fetched/applied');
    assert.ok(seen.desiredIsNewer);
    assert.ok(seen.after.converged, JSON.stringify(seen.after));
  });

  it('refuses a newer resolution beyond the skew, and converges at the next poll', async () => {
    // Prepare: A's clock runs 5 s ahead; B resolves the newer commit 2 s later.

    // Act
    const seen = await resolvedAtSkewTrial(world, 5_000, 2_000);

    // Assess
    assert.equal(seen.newerFetch, 'stale');
    assert.equal(seen.desiredIsNewer, false);
    assert.equal(seen.afterPoll, 'fetched/applied');
    assert.ok(seen.after.converged, JSON.stringify(seen.after));
  });

  it('keeps one apply per track while the holder clock lags less than the lease', async () => {
    // Prepare: the holder's clock lags 1 s less than the lease lasts.
    const leaseMs = 120_000 * 2 + 60_000;

    // Act
    const inside = await leaseSkewTrial(world, leaseMs - 1_000);
    const beyond = await leaseSkewTrial(world, leaseMs + 1_000);

    // Assess
    assert.equal(inside.second, 'TRACK_BUSY');
    assert.equal(inside.overlapped, false);
    assert.equal(inside.first, 'applied');
    assert.ok(inside.after.converged, JSON.stringify(inside.after));
    // Beyond the lease the lagging holder looks expired: the rule cannot keep them apart.
    assert.equal(beyond.overlapped, true);
    assert.ok(beyond.after.converged, JSON.stringify(beyond.after));
  });
});

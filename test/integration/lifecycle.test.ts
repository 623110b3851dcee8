/**
 * A track's lifecycle on the real test cluster: ownership between tracks
 * (and objects created by something else), suspend and resume as stored
 * state (automatic jobs stop, manual ones name the suspension), and delete
 * under each deletion policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { Track } from '../../src/config/types.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import {
  deleteTrack,
  resumeTrack,
  suspendTrack,
  unpinTrackAction,
} from '../../src/sync/lifecycle.ts';
import { runJob } from '../../src/sync/run-job.ts';
import { objectStatuses } from '../../src/sync/object-statuses.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles } from '../harness/git-server.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';
import { controlPlaneBinaries } from '../harness/testbin.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);

const configMap = (name: string, value: string, namespace?: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}${namespace ? `, namespace: ${namespace}` : ''}}\ndata: {value: "${value}"}\n`;

describe('track lifecycle', () => {
  const fixture = new TrackFixture('life');

  before(() => fixture.start());
  after(() => fixture.stop());

  it('never changes an object another track owns, nor one created by hand unless adopting', async () => {
    // Prepare: track "first" owns ConfigMap shared; a ConfigMap made by hand sits beside it.
    const first = await fixture.newTrack('first');
    await pushFiles(first.repo, { 'shared.yaml': configMap('shared', 'first') });
    assert.equal(
      (await syncTrack(first.track, { trigger: 'manual' }, fixture.deps)).result,
      'applied',
    );
    await fixture.core.createNamespacedConfigMap({
      namespace: first.ns,
      body: { metadata: { name: 'by-hand' }, data: { value: 'by hand' } },
    });
    const second = await fixture.newTrack('second');
    await pushFiles(second.repo, {
      'shared.yaml': configMap('shared', 'second', first.ns),
      'by-hand.yaml': configMap('by-hand', 'second', first.ns),
      'own.yaml': configMap('own', 'second'),
    });

    // Act
    const result = await syncTrack(second.track, { trigger: 'manual' }, fixture.deps);

    // Assess: both foreign objects failed as conflicts and kept their values; its own applied.
    assert.equal(result.result, 'failed');
    const bySubject = new Map(result.changeset.map((e) => [e.subject, e]));
    const shared = bySubject.get(`ConfigMap/${first.ns}/shared`);
    assert.equal(shared?.action, 'failed');
    assert.match(shared?.error ?? '', /ownership conflict: owned by track "first"/);
    const byHand = bySubject.get(`ConfigMap/${first.ns}/by-hand`);
    assert.equal(byHand?.action, 'failed');
    assert.match(byHand?.error ?? '', /without a driftless\.dev\/track label .*adopt: true/);
    assert.equal(bySubject.get(`ConfigMap/${second.ns}/own`)?.action, 'created');
    assert.equal(await fixture.configMapValue(first.ns, 'shared'), 'first');
    assert.equal(await fixture.configMapValue(first.ns, 'by-hand'), 'by hand');
    const state = await readTrackState(fixture.deps.state, 'second');
    assert.equal(conditionOf(state, 'Ready')?.reason, 'OwnershipConflict');
    assert.equal(conditionOf(state, 'ChildrenUpToDate')?.reason, 'OwnershipConflict');
    const live = await fixture.core.readNamespacedConfigMap({
      name: 'shared',
      namespace: first.ns,
    });
    assert.equal(live.metadata?.labels?.['driftless.dev/track'], 'first');

    // And with adopt: true the unlabelled one is taken over, the other track's still is not.
    const adopting = { ...second.track, adopt: true };
    const again = await syncTrack(adopting, { trigger: 'manual' }, fixture.deps);
    const after = new Map(again.changeset.map((e) => [e.subject, e.action]));
    assert.equal(after.get(`ConfigMap/${first.ns}/by-hand`), 'configured');
    assert.equal(after.get(`ConfigMap/${first.ns}/shared`), 'failed');
    assert.equal(await fixture.configMapValue(first.ns, 'by-hand'), 'second');
    assert.equal(await fixture.configMapValue(first.ns, 'shared'), 'first');
  });

  it('suspends in stored state: webhook, poll and drift jobs do nothing; resume lets them run', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('paused');
    await pushFiles(repo, { 'settings.yaml': configMap('settings', 'v1') });
    const deps = fixture.jobDeps([track]);
    await runJob({ type: 'fetch', track: 'paused', trigger: 'manual' }, deps, executeJob);
    await runJob(deps.queued.shift()!, deps, executeJob);
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'v1');

    // Act: suspend, then a push arrives and a drift tick runs.
    await suspendTrack(track, { state: fixture.deps.state });
    await pushFiles(repo, { 'settings.yaml': configMap('settings', 'v2') });
    await fixture.core.patchNamespacedConfigMap({
      name: 'settings',
      namespace: ns,
      body: [{ op: 'replace', path: '/data/value', value: 'by hand' }],
    });
    const fetched = await runJob(
      { type: 'fetch', track: 'paused', trigger: 'webhook' },
      deps,
      executeJob,
    );
    const drift = await runJob({ type: 'drift', track: 'paused' }, deps, executeJob);

    // Assess: nothing ran, nothing was queued, the hand edit stands, status says suspended.
    assert.equal(fetched.type, 'suspended');
    assert.equal(drift.type, 'suspended');
    assert.deepEqual(deps.queued, []);
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'by hand');
    const state = await readTrackState(fixture.deps.state, 'paused');
    assert.equal(state.suspended, true);
    assert.equal(conditionOf(state, 'Ready')?.reason, 'Suspended');

    // Resume: the next webhook fetch and its sync apply v2.
    const resumed = await resumeTrack(track, { state: fixture.deps.state });
    assert.equal(resumed.suspended, false);
    await runJob({ type: 'fetch', track: 'paused', trigger: 'webhook' }, deps, executeJob);
    const sync = await runJob(deps.queued.shift()!, deps, executeJob);
    assert.equal(sync.type, 'sync');
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'v2');
    const history = await fixture.deps.state.listHistory('paused');
    assert.deepEqual(
      history
        .filter((e) => e.result === 'suspended' || e.result === 'resumed')
        .map((e) => e.result),
      ['resumed', 'suspended'],
    );
  });

  it('deletes under each policy: Delete collects, Orphan and a suspended track leave objects; state goes, history stays', async () => {
    // Prepare: three synced tracks.
    const synced = async (name: string, extra = '') => {
      const fresh = await fixture.newTrack(name, extra);
      await pushFiles(fresh.repo, {
        'a.yaml': configMap('a', name),
        'kept.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, annotations: {driftless.dev/prune: disabled}}\ndata: {value: "${name}"}\n`,
      });
      const result = await syncTrack(fresh.track, { trigger: 'manual' }, fixture.deps);
      assert.equal(result.result, 'applied', result.error);
      return fresh;
    };
    const collected = await synced('del-delete');
    const orphaned = await synced('del-orphan', 'deletionPolicy: Orphan');
    const frozen = await synced('del-frozen');
    await suspendTrack(frozen.track, { state: fixture.deps.state });
    const deps = { state: fixture.deps.state, cluster: fixture.deps.cluster };

    // Act
    const deleted = await deleteTrack(collected.track, undefined, deps);
    const orphan = await deleteTrack(orphaned.track, undefined, deps);
    const suspended = await deleteTrack(frozen.track, 'Delete', deps);

    // Assess
    assert.equal(deleted.result, 'deleted');
    assert.equal(deleted.policy, 'Delete'); // MirrorPrune with prune: true
    assert.equal(await fixture.configMapValue(collected.ns, 'a'), undefined);
    assert.equal(await fixture.configMapValue(collected.ns, 'kept'), 'del-delete');
    assert.equal(orphan.policy, 'Orphan');
    assert.equal(await fixture.configMapValue(orphaned.ns, 'a'), 'del-orphan');
    assert.equal(suspended.result, 'deleted');
    assert.match(suspended.note ?? '', /suspended: nothing was collected/);
    assert.equal(await fixture.configMapValue(frozen.ns, 'a'), 'del-frozen');
    const tracks = await fixture.deps.state.listTracks();
    for (const name of ['del-delete', 'del-orphan', 'del-frozen']) {
      assert.ok(!tracks.includes(name), `${name}: state removed`);
      const [last] = await fixture.deps.state.listHistory(name, 1);
      assert.equal(last?.result, 'deleted', name);
    }
  });

  it('delete keeps the state of a Namespace left in place for what it holds, and collects it once that is gone', async () => {
    // Prepare: a track with a Namespace of its own, and a ConfigMap someone else put in it
    const held = await fixture.newTrack('del-held');
    const own = `${held.ns}-own`;
    await pushFiles(held.repo, {
      'ns.yaml': `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${own}}\n`,
      'a.yaml': configMap('a', 'del-held', own),
    });
    const synced = await syncTrack(held.track, { trigger: 'manual' }, fixture.deps);
    assert.equal(synced.result, 'applied', synced.error);
    await fixture.core.createNamespacedConfigMap({
      namespace: own,
      body: { metadata: { name: 'theirs' } },
    });
    const deps = { state: fixture.deps.state, cluster: fixture.deps.cluster };

    try {
      // Act
      const first = await deleteTrack(held.track, 'Delete', deps);
      const state = await readTrackState(fixture.deps.state, 'del-held');
      await fixture.core.deleteNamespacedConfigMap({ name: 'theirs', namespace: own });
      const second = await deleteTrack(held.track, 'Delete', deps);

      // Assess: the track's ConfigMap went, the Namespace stayed with the state, then went
      assert.equal(first.result, 'failed');
      assert.match(
        first.error ?? '',
        new RegExp(`Namespace/${own}: not deleted: .*ConfigMap/${own}/theirs`),
      );
      assert.equal(await fixture.configMapValue(own, 'a'), undefined);
      assert.deepEqual(
        state.inventory.map((entry) => entry.subject),
        [`Namespace/${own}`],
      );
      assert.equal(second.result, 'deleted', second.error);
      assert.ok(!(await fixture.deps.state.listTracks()).includes('del-held'));
    } finally {
      await fixture.core.deleteNamespace({ name: own }).catch(() => undefined);
    }
  });

  it('deleting a track with no state collects nothing, says so and records nothing; its objects stay', async () => {
    // Prepare: deleted once leaving its objects (Orphan), so it has history but no state.
    const gone = await fixture.newTrack('del-again');
    await pushFiles(gone.repo, { 'a.yaml': configMap('a', 'del-again') });
    const synced = await syncTrack(gone.track, { trigger: 'manual' }, fixture.deps);
    assert.equal(synced.result, 'applied', synced.error);
    const deps = { state: fixture.deps.state, cluster: fixture.deps.cluster };
    assert.equal((await deleteTrack(gone.track, 'Orphan', deps)).result, 'deleted');

    // Act: deleted again, as Delete.
    const again = await deleteTrack(gone.track, 'Delete', deps);

    // Assess: the labelled ConfigMap stays, no state is written back, one `deleted` entry only.
    assert.equal(again.result, 'deleted');
    assert.equal(again.unchanged, true);
    assert.deepEqual(again.changeset, []);
    assert.match(
      again.note ?? '',
      /^the track has no state \(no inventory\): nothing was collected/,
    );
    assert.equal(await fixture.configMapValue(gone.ns, 'a'), 'del-again');
    assert.ok(!(await fixture.deps.state.listTracks()).includes('del-again'));
    assert.deepEqual(
      (await fixture.deps.state.listHistory('del-again')).map((entry) => entry.result),
      ['deleted', 'applied'],
    );
  });

  it('suspend, resume and unpin that find the track as asked write neither state nor history', async () => {
    // Prepare
    const { track, repo } = await fixture.newTrack('no-op');
    await pushFiles(repo, { 'a.yaml': configMap('a', 'v1') });
    await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    const deps = { state: fixture.deps.state };
    await suspendTrack(track, deps);
    const version = async () => (await fixture.deps.state.read('no-op'))?.version;
    const suspended = await version();

    // Act
    const twice = await suspendTrack(track, deps);
    const unpinned = await unpinTrackAction(track, deps);
    const unchangedAt = await version();
    await resumeTrack(track, deps);
    const resumedTwice = await resumeTrack(track, deps);

    // Assess
    assert.equal(twice.unchanged, true);
    assert.equal(unpinned.unchanged, true);
    assert.equal(resumedTwice.unchanged, true);
    assert.equal(unchangedAt, suspended);
    assert.deepEqual(
      (await fixture.deps.state.listHistory('no-op')).map((entry) => entry.result),
      ['resumed', 'suspended', 'applied'],
    );
  });

  it('targetNamespace puts every namespaced object in one namespace, whatever it names', async () => {
    // Prepare
    const target = await fixture.newTrack('target');
    const placed = await fixture.newTrack('placed', `targetNamespace: ${target.ns}`);
    await pushFiles(placed.repo, {
      'named.yaml': configMap('named', 'x', 'somewhere-else'),
      'unnamed.yaml': configMap('unnamed', 'y'),
    });

    // Act
    const result = await syncTrack(placed.track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(await fixture.configMapValue(target.ns, 'named'), 'x');
    assert.equal(await fixture.configMapValue(target.ns, 'unnamed'), 'y');
    assert.equal(await fixture.configMapValue(placed.ns, 'unnamed'), undefined);
  });

  it('force recreates an object whose change an immutable field refuses; without it the sync fails saying so', async () => {
    // Prepare: an immutable Secret, then a change of its data.
    const secret = (value: string) =>
      `apiVersion: v1\nkind: Secret\nmetadata: {name: frozen}\nimmutable: true\nstringData: {value: "${value}"}\n`;
    const { track, repo, ns } = await fixture.newTrack('immutable');
    await pushFiles(repo, { 'secret.yaml': secret('one') });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, fixture.deps)).result, 'applied');
    await pushFiles(repo, { 'secret.yaml': secret('two') });
    const read = async () =>
      Buffer.from(
        (await fixture.core.readNamespacedSecret({ name: 'frozen', namespace: ns })).data?.value ??
          '',
        'base64',
      ).toString();

    // Act
    const refused = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    const forced = await syncTrack({ ...track, force: true }, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(refused.result, 'failed');
    assert.match(refused.error ?? '', /set force: true on the track/);
    assert.equal(forced.result, 'applied', forced.error);
    assert.deepEqual(
      forced.changeset.map((e) => [e.subject, e.action]),
      [[`Secret/${ns}/frozen`, 'recreated']],
    );
    assert.equal(await read(), 'two');
  });

  it('acts as serviceAccountName: refused without RBAC naming the account, nothing pruned; applied once a Role allows it', async () => {
    // Prepare: a track acting as "deployer", which has no rights yet.
    const { track, repo, ns } = await fixture.newTrack(
      'impersonated',
      'serviceAccountName: deployer',
    );
    await fixture.core.createNamespacedServiceAccount({
      namespace: ns,
      body: { metadata: { name: 'deployer' } },
    });
    await pushFiles(repo, { 'settings.yaml': configMap('settings', 'as-deployer') });

    // Act
    const refused = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    const rbac = fixture.kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'deployer' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'deployer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'deployer' },
        subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: ns }],
      },
    });
    const allowed = await eventuallyApplied(track);

    // Assess
    assert.equal(refused.result, 'failed');
    assert.match(
      refused.error ?? '',
      new RegExp(`User "system:serviceaccount:${ns}:deployer" cannot .*configmaps`),
    );
    assert.ok(!refused.changeset.some((entry) => entry.action === 'deleted'));
    assert.equal(allowed.result, 'applied', allowed.error);
    const live = await fixture.core.readNamespacedConfigMap({ name: 'settings', namespace: ns });
    assert.equal(live.data?.value, 'as-deployer');
    // Written by the account: the managed fields say who applied them.
    assert.ok(live.metadata?.managedFields?.some((f) => f.manager === 'driftless'));

    // Outside its Role's namespace the account may not write: the sync fails, the object is not made.
    const elsewhere = await fixture.newTrack('elsewhere');
    await pushFiles(repo, {
      'settings.yaml': configMap('settings', 'as-deployer'),
      'other.yaml': configMap('other', 'x', elsewhere.ns),
    });
    const outside = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(outside.result, 'failed');
    assert.match(outside.error ?? '', /system:serviceaccount:.*:deployer/);
    assert.equal(await fixture.configMapValue(elsewhere.ns, 'other'), undefined);
  });

  it('status --objects: each object in sync, out of sync, missing or failed, with its health', async () => {
    // Prepare: three objects applied, a fourth owned by another track; then one edited, one deleted.
    const owner = await fixture.newTrack('owner');
    await pushFiles(owner.repo, { 'taken.yaml': configMap('taken', 'owner') });
    await syncTrack(owner.track, { trigger: 'manual' }, fixture.deps);
    const { track, repo, ns } = await fixture.newTrack('objects');
    await pushFiles(repo, {
      'same.yaml': configMap('same', 'v1'),
      'edited.yaml': configMap('edited', 'v1'),
      'gone.yaml': configMap('gone', 'v1'),
      'taken.yaml': configMap('taken', 'objects', owner.ns),
    });
    await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    await fixture.core.patchNamespacedConfigMap({
      name: 'edited',
      namespace: ns,
      body: [{ op: 'replace', path: '/data/value', value: 'by hand' }],
    });
    await fixture.core.deleteNamespacedConfigMap({ name: 'gone', namespace: ns });

    // Act
    const objects = await objectStatuses(track, fixture.deps);

    // Assess
    const bySubject = new Map(objects.map((o) => [o.subject, o]));
    assert.equal(bySubject.get(`ConfigMap/${ns}/same`)?.sync, 'InSync');
    assert.equal(bySubject.get(`ConfigMap/${ns}/same`)?.health, 'Healthy');
    assert.equal(bySubject.get(`ConfigMap/${ns}/edited`)?.sync, 'OutOfSync');
    assert.match(bySubject.get(`ConfigMap/${ns}/edited`)?.message ?? '', /\/data\/value/);
    assert.equal(bySubject.get(`ConfigMap/${ns}/gone`)?.sync, 'Missing');
    assert.equal(bySubject.get(`ConfigMap/${ns}/gone`)?.health, 'Unknown');
    assert.equal(bySubject.get(`ConfigMap/${owner.ns}/taken`)?.sync, 'Failed');
    assert.match(bySubject.get(`ConfigMap/${owner.ns}/taken`)?.message ?? '', /ownership conflict/);
    assert.deepEqual(
      objects.map((o) => o.apiVersion),
      ['v1', 'v1', 'v1', 'v1'],
    );
  });

  it('drift correction undoes fields added by hand with kubectl, keeping what controllers wrote', async () => {
    // Prepare: a Deployment whose replicas Git leaves to an autoscaler, and a ConfigMap.
    const deployment = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web}',
      'spec:',
      '  selector: {matchLabels: {app: web}}',
      '  template:',
      '    metadata: {labels: {app: web}}',
      '    spec: {containers: [{name: web, image: registry.example/web:1}]}',
      '',
    ].join('\n');
    // An annotation people may set by hand: ignored, so it is neither reported nor removed.
    const { track, repo, ns } = await fixture.newTrack(
      'handedit',
      'ignore: [{paths: [/metadata/annotations/keep]}]',
    );
    await pushFiles(repo, {
      'web.yaml': deployment,
      'settings.yaml': configMap('settings', 'git'),
    });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, fixture.deps)).result, 'applied');
    // By hand, with the real kubectl: a label, an annotation, an extra data key.
    const { kubectl } = await controlPlaneBinaries();
    const kubectlRun = (...args: string[]) =>
      run(kubectl, ['--kubeconfig', sharedKubeconfigPath(), '-n', ns, ...args]);
    await kubectlRun('label', 'deployment', 'web', 'hand=added');
    await kubectlRun('annotate', 'configmap', 'settings', 'note=by-hand', 'keep=me');
    await kubectlRun(
      'patch',
      'configmap',
      'settings',
      '--type',
      'merge',
      '-p',
      '{"data":{"extra":"x"}}',
    );
    // The autoscaler's write: the scale subresource, as the HPA controller (kube-controller-manager) does it.
    const apps = fixture.kc.makeApiClient(AppsV1Api);
    await apps.replaceNamespacedDeploymentScale({
      name: 'web',
      namespace: ns,
      body: { metadata: { name: 'web', namespace: ns }, spec: { replicas: 3 } },
      fieldManager: 'kube-controller-manager',
    });

    // Act
    const result = await reconcileDrift(track, { type: 'drift', track: track.name }, fixture.deps);

    // Assess
    assert.deepEqual(result.drifted.map((d) => d.subject).sort(), [
      `ConfigMap/${ns}/settings`,
      `Deployment/${ns}/web`,
    ]);
    const web = result.drifted.find((d) => d.subject.startsWith('Deployment'));
    assert.deepEqual(web?.changedBy, ['kubectl-label']);
    assert.deepEqual(web?.patch, [{ op: 'remove', path: '/metadata/labels/hand' }]);
    assert.equal(result.corrected, true, JSON.stringify(result.changeset));
    const live = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    assert.equal(live.metadata?.labels?.hand, undefined);
    assert.equal(live.spec?.replicas, 3, 'the autoscaler-owned replicas stay');
    const settings = await fixture.core.readNamespacedConfigMap({
      name: 'settings',
      namespace: ns,
    });
    assert.equal(settings.metadata?.annotations?.note, undefined);
    assert.equal(settings.metadata?.annotations?.keep, 'me', 'an ignored hand edit stays');
    assert.deepEqual(settings.data, { value: 'git' });
    // And a second check finds nothing left.
    const again = await reconcileDrift(track, { type: 'drift', track: track.name }, fixture.deps);
    assert.deepEqual(again.drifted, []);
  });

  it('judges a custom resource by healthCheckExprs (CEL): in progress, failed, current', async () => {
    // Prepare: a CRD without a status subresource (status is written with the object) and a Widget.
    const group = 'life.driftless.dev';
    const crd = [
      'apiVersion: apiextensions.k8s.io/v1',
      'kind: CustomResourceDefinition',
      `metadata: {name: gadgets.${group}}`,
      'spec:',
      `  group: ${group}`,
      '  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}',
      '  scope: Namespaced',
      '  versions:',
      '    - name: v1',
      '      served: true',
      '      storage: true',
      '      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}',
      '',
    ].join('\n');
    const gadget = `apiVersion: ${group}/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n`;
    const { track, repo, ns } = await fixture.newTrack(
      'cel',
      [
        'wait: true',
        'timeout: 3s',
        'healthCheckExprs:',
        `  - apiVersion: ${group}/v1`,
        '    kind: Gadget',
        `    current: "self.status.phase == 'Ready'"`,
        `    failed: "has(self.status) && self.status.phase == 'Broken'"`,
      ].join('\n'),
    );
    await pushFiles(repo, { 'crd.yaml': crd, 'gadget.yaml': gadget });
    const setPhase = async (phase: string) => {
      const { CustomObjectsApi } = await import('@kubernetes/client-node');
      await fixture.kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({
        group,
        version: 'v1',
        namespace: ns,
        plural: 'gadgets',
        name: 'g',
        body: [{ op: 'add', path: '/status', value: { phase } }],
      });
    };

    // Act + Assess: no status yet -> not healthy in time, saying which expression waits.
    const waiting = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(waiting.result, 'failed');
    assert.match(
      waiting.error ?? '',
      /Gadget\/.*\/g: self\.status\.phase == 'Ready': No such key: status/,
    );

    await setPhase('Broken');
    const broken = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(broken.result, 'failed');
    assert.match(
      broken.error ?? '',
      /failed: has\(self\.status\) && self\.status\.phase == 'Broken'/,
    );

    await setPhase('Ready');
    const ready = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(ready.result, 'unchanged', ready.error);
    const state = await readTrackState(fixture.deps.state, track.name);
    assert.equal(conditionOf(state, 'Healthy')?.status, 'True');
  });

  it('stops waiting for health when a newer revision of the track is queued', async () => {
    // Prepare: a Deployment that never becomes available here (the test cluster runs no pods),
    // and a track that waits up to a minute for it.
    const deployment = (image: string) =>
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: {name: slow}',
        'spec:',
        '  selector: {matchLabels: {app: slow}}',
        '  template:',
        '    metadata: {labels: {app: slow}}',
        `    spec: {containers: [{name: slow, image: "${image}"}]}`,
        '',
      ].join('\n');
    const { track, repo } = await fixture.newTrack('newer', 'wait: true\ntimeout: 60s');
    await pushFiles(repo, { 'slow.yaml': deployment('registry.example/slow:1') });
    const deps = fixture.jobDeps([track]);
    await runJob({ type: 'fetch', track: 'newer', trigger: 'webhook' }, deps, executeJob);
    const firstSync = deps.queued.shift()!;

    // Act: the first sync waits; meanwhile a push is fetched (and its sync queued).
    const waiting = runJob(firstSync, deps, executeJob);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await pushFiles(repo, { 'slow.yaml': deployment('registry.example/slow:2') });
    await runJob({ type: 'fetch', track: 'newer', trigger: 'webhook' }, deps, executeJob);
    const done = await waiting;

    // Assess: applied, its wait cancelled naming the newer revision, which is queued next.
    assert.equal(done.type, 'sync');
    const result = done.type === 'sync' ? done.result : undefined;
    assert.equal(result?.result, 'applied', result?.error);
    const state = await readTrackState(fixture.deps.state, 'newer');
    const healthy = conditionOf(state, 'Healthy');
    assert.equal(healthy?.reason, 'HealthCheckCanceled');
    assert.match(
      healthy?.message ?? '',
      new RegExp(`revision ${state.desiredRevision} was queued`),
    );
    assert.equal(conditionOf(state, 'Ready')?.status, 'Unknown');
    assert.deepEqual(
      deps.queued.map((job) => job.type),
      ['sync'],
    );
  });

  /** RBAC takes a moment to reach the authorizer's cache: sync until applied, briefly. */
  async function eventuallyApplied(track: Track) {
    for (let attempt = 0; ; attempt++) {
      const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
      if (result.result === 'applied' || attempt >= 20) return result;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
});

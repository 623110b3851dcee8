/**
 * A sync checks before it writes: on the real test cluster, an unchanged
 * revision is synced without a single apply request, and whatever was changed
 * in the cluster by hand is still put back to Git's state.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { refOf, subjectOf } from '../../src/cluster/kube-object.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { pushFiles } from '../harness/git-server.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, data: Record<string, string>): string =>
  [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${name}`,
    'data:',
    ...Object.entries(data).map(([key, value]) => `  ${key}: "${value}"`),
    '',
  ].join('\n');

/** Kinds the server defaults and normalises: a no-op must still be recognised as one. */
const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          env:
            - {name: B, value: "2"}
            - {name: A, value: "1"}
          ports:
            - containerPort: 8080
          resources:
            requests: {cpu: 1000m, memory: 1024Mi}
`;
const SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
`;
const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: token
stringData:
  token: s3cret
`;

/**
 * The real cluster port, with the subjects of every apply (not dry-run) sent
 * through it, and every LIST as `Kind/namespace`.
 */
function countingApplies(inner: KubernetesPort): {
  port: KubernetesPort;
  applied: string[];
  listed: string[];
} {
  const applied: string[] = [];
  const listed: string[] = [];
  const port: KubernetesPort = {
    discover: (refresh) => inner.discover(refresh),
    serverVersion: () => inner.serverVersion(),
    apply: (object, options) => {
      if (!options.dryRun) applied.push(subjectOf(refOf(object)));
      return inner.apply(object, options);
    },
    get: (ref) => inner.get(ref),
    list: (query) => {
      listed.push(`${query.kind}/${query.namespace ?? ''}`);
      return inner.list(query);
    },
    delete: (ref, options) => inner.delete(ref, options),
  };
  return { port, applied, listed };
}

describe('sync checks before it writes', () => {
  const fixture = new TrackFixture('check');
  let deps: SyncDeps;
  let applied: string[];
  let listed: string[];

  before(async () => {
    await fixture.start();
    const counting = countingApplies(fixture.deps.cluster);
    deps = { ...fixture.deps, cluster: counting.port };
    applied = counting.applied;
    listed = counting.listed;
  });

  after(() => fixture.stop());

  /** Applies sent by `sync`, by subject. */
  async function appliesOf<T>(sync: () => Promise<T>): Promise<{ result: T; sent: string[] }> {
    const from = applied.length;
    const result = await sync();
    return { result, sent: applied.slice(from) };
  }

  async function readConfigMap(ns: string, name: string) {
    return fixture.core.readNamespacedConfigMap({ name, namespace: ns }).catch(() => undefined);
  }

  /** Replaces a ConfigMap as `kubectl edit` does: a full update under another field manager. */
  async function editConfigMap(
    ns: string,
    name: string,
    change: (cm: NonNullable<Awaited<ReturnType<typeof readConfigMap>>>) => void,
  ): Promise<void> {
    const live = await fixture.core.readNamespacedConfigMap({ name, namespace: ns });
    change(live);
    await fixture.core.replaceNamespacedConfigMap({
      name,
      namespace: ns,
      body: live,
      fieldManager: 'kubectl-edit',
    });
  }

  it('re-syncs an unchanged revision without an apply request and reports it unchanged', async () => {
    // Prepare
    const { track, repo } = await fixture.newTrack('noop');
    await pushFiles(repo, {
      'a.yaml': configMap('a', { value: 'one' }),
      'b.yaml': configMap('b', { value: 'one' }),
      'deployment.yaml': DEPLOYMENT,
      'service.yaml': SERVICE,
      'secret.yaml': SECRET,
    });
    const first = await appliesOf(() => syncTrack(track, { trigger: 'manual' }, deps));

    // Act
    const again = await appliesOf(() => syncTrack(track, { trigger: 'manual' }, deps));

    // Assess
    assert.equal(first.result.result, 'applied', first.result.error);
    assert.equal(first.sent.length, 5, 'the first sync applies every object');
    assert.equal(again.result.result, 'unchanged', again.result.error);
    assert.deepEqual(again.sent, [], 'an unchanged revision sends no apply');
    assert.deepEqual(
      again.result.changeset.map((e) => e.action),
      ['unchanged', 'unchanged', 'unchanged', 'unchanged', 'unchanged'],
    );
    assert.equal(again.result.state.objectsInSync, 5);
    assert.equal(again.result.state.inventory.length, 5);
  });

  it('lists a kind once per sync: the LIST started from the inventory is the one the apply reads', async () => {
    // Prepare
    const { track, repo } = await fixture.newTrack('prefetch');
    await pushFiles(repo, {
      'a.yaml': configMap('a', { value: 'one' }),
      'b.yaml': configMap('b', { value: 'one' }),
    });
    const first = await syncTrack(track, { trigger: 'manual' }, deps);
    const from = listed.length;

    // Act
    const again = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(first.result, 'applied', first.error);
    assert.equal(again.result, 'unchanged', again.error);
    assert.deepEqual(listed.slice(from), [`ConfigMap/${track.namespace}`]);
  });

  it('applies only the object a new revision changes', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('one-of-three');
    await pushFiles(repo, {
      'a.yaml': configMap('a', { value: 'one' }),
      'b.yaml': configMap('b', { value: 'one' }),
      'c.yaml': configMap('c', { value: 'one' }),
    });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await pushFiles(repo, { 'b.yaml': configMap('b', { value: 'two' }) });

    // Act
    const { result, sent } = await appliesOf(() => syncTrack(track, { trigger: 'webhook' }, deps));

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(sent, [`ConfigMap/${ns}/b`]);
    assert.equal((await readConfigMap(ns, 'b'))?.data?.value, 'two');
  });

  it('puts back a manifest field changed by hand', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('edited');
    await pushFiles(repo, {
      'a.yaml': configMap('a', { value: 'one' }),
      'b.yaml': configMap('b', { value: 'one' }),
    });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await editConfigMap(ns, 'a', (cm) => (cm.data = { ...cm.data, value: 'by-hand' }));

    // Act
    const { result, sent } = await appliesOf(() => syncTrack(track, { trigger: 'manual' }, deps));

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(sent, [`ConfigMap/${ns}/a`]);
    assert.equal((await readConfigMap(ns, 'a'))?.data?.value, 'one');
    assert.deepEqual(
      result.changeset.map((e) => [e.subject, e.action]),
      [
        [`ConfigMap/${ns}/a`, 'configured'],
        [`ConfigMap/${ns}/b`, 'unchanged'],
      ],
    );
  });

  it('removes a field driftless applied before once the new manifest leaves it out', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('field-gone');
    await pushFiles(repo, { 'a.yaml': configMap('a', { value: 'one', extra: 'x' }) });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await pushFiles(repo, { 'a.yaml': configMap('a', { value: 'one' }) });

    // Act
    const { result, sent } = await appliesOf(() => syncTrack(track, { trigger: 'webhook' }, deps));

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(sent, [`ConfigMap/${ns}/a`]);
    assert.deepEqual((await readConfigMap(ns, 'a'))?.data, { value: 'one' });
  });

  it('recreates an object deleted by hand', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('deleted');
    await pushFiles(repo, {
      'a.yaml': configMap('a', { value: 'one' }),
      'b.yaml': configMap('b', { value: 'one' }),
    });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await fixture.core.deleteNamespacedConfigMap({ name: 'a', namespace: ns });

    // Act
    const { result, sent } = await appliesOf(() => syncTrack(track, { trigger: 'manual' }, deps));

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(sent, [`ConfigMap/${ns}/a`]);
    assert.equal(
      result.changeset.find((e) => e.subject === `ConfigMap/${ns}/a`)?.action,
      'created',
    );
    assert.equal((await readConfigMap(ns, 'a'))?.data?.value, 'one');
  });

  it('puts back the ownership label removed by hand', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('unlabelled');
    await pushFiles(repo, { 'a.yaml': configMap('a', { value: 'one' }) });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await editConfigMap(ns, 'a', (cm) => {
      delete cm.metadata!.labels!['driftless.dev/track'];
    });
    const unlabelled = await readConfigMap(ns, 'a');

    // Act
    const { result, sent } = await appliesOf(() => syncTrack(track, { trigger: 'manual' }, deps));

    // Assess
    assert.equal(unlabelled?.metadata?.labels?.['driftless.dev/track'], undefined);
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(sent, [`ConfigMap/${ns}/a`]);
    const live = await readConfigMap(ns, 'a');
    assert.equal(live?.metadata?.labels?.['driftless.dev/track'], track.name);
  });
});

/**
 * Helm charts from an OCI registry: a real registry (CNCF distribution, TLS
 * from a test CA), charts pushed with the real `helm push`, a track following
 * a semver range or an exact version, synced to the test cluster.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { commitOf } from '../../src/object-id.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles } from '../harness/git-server.ts';
import { startOciRegistry, type OciRegistry } from '../harness/oci-registry.ts';
import { rendererBinaries, type RendererBinaries } from '../harness/renderers.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);

describe('Helm charts from an OCI registry', () => {
  const fixture = new TrackFixture('oci');
  let tools: RendererBinaries;
  let registry: OciRegistry;
  let work: string;
  const previousCertFile = process.env.SSL_CERT_FILE;

  before(async () => {
    tools = await rendererBinaries();
    process.env.DRIFTLESS_HELM = tools.helm;
    registry = await startOciRegistry();
    // The product's helm trusts the registry as Go does: through SSL_CERT_FILE.
    process.env.SSL_CERT_FILE = registry.caFile;
    work = await mkdtemp(join(tmpdir(), 'driftless-oci-'));
    await fixture.start();
  });

  after(async () => {
    if (previousCertFile === undefined) delete process.env.SSL_CERT_FILE;
    else process.env.SSL_CERT_FILE = previousCertFile;
    await fixture.stop();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** Packages chart `web` at `version` and pushes it to oci://<registry>/charts. */
  async function pushChart(version: string): Promise<void> {
    const chart = join(work, `web-src-${version}`);
    await mkdir(join(chart, 'templates'), { recursive: true });
    await writeFile(join(chart, 'Chart.yaml'), `apiVersion: v2\nname: web\nversion: ${version}\n`);
    await writeFile(
      join(chart, 'templates', 'settings.yaml'),
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: {{ .Release.Name }}-settings',
        'data:',
        '  chartVersion: {{ .Chart.Version | quote }}',
        '',
      ].join('\n'),
    );
    const helmEnv = {
      ...process.env,
      HOME: work,
      HELM_CACHE_HOME: join(work, 'cache'),
      HELM_CONFIG_HOME: join(work, 'config'),
      HELM_DATA_HOME: join(work, 'data'),
    };
    await run(tools.helm, ['package', chart, '-d', work], { env: helmEnv });
    await run(
      tools.helm,
      [
        'push',
        join(work, `web-${version}.tgz`),
        `oci://${registry.host}/charts`,
        '--ca-file',
        registry.caFile,
      ],
      { env: helmEnv },
    );
  }

  async function chartVersionIn(ns: string, name: string): Promise<string | undefined> {
    const live = await fixture.core.readNamespacedConfigMap({ name, namespace: ns });
    return live.data?.chartVersion;
  }

  it('follows a semver range: the newest match, and a new matching version is a new revision', async () => {
    // Prepare
    await pushChart('1.0.0');
    await pushChart('1.2.0');
    await pushChart('2.0.0'); // outside the range
    const { track, repo, ns } = await fixture.newTrack(
      'range',
      `helm: {chart: web, repository: "oci://${registry.host}/charts", version: ">=1.0.0 <2", releaseName: site}`,
    );
    await pushFiles(repo, { 'README.md': 'values would live here\n' });

    // Act
    const first = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    const firstVersion = await chartVersionIn(ns, 'site-settings');
    await pushChart('1.3.0');
    const second = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(first.result, 'applied', first.error);
    assert.equal(firstVersion, '1.2.0');
    assert.equal(second.result, 'applied', second.error);
    assert.equal(await chartVersionIn(ns, 'site-settings'), '1.3.0');
    assert.notEqual(second.revision, first.revision);
    assert.equal(commitOf(second.revision!), commitOf(first.revision!));
  });

  it('renders an exact version', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack(
      'exact',
      `helm: {chart: web, repository: "oci://${registry.host}/charts", version: "1.0.0", releaseName: pinned}`,
    );
    await pushFiles(repo, { 'README.md': 'pinned\n' });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(await chartVersionIn(ns, 'pinned-settings'), '1.0.0');
  });

  it('fails a chart the registry does not have, naming it, and applies nothing', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack(
      'missing',
      `helm: {chart: nope, repository: "oci://${registry.host}/charts"}`,
    );
    await pushFiles(repo, { 'README.md': 'missing\n' });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'failed');
    assert.match(
      result.error ?? '',
      new RegExp(`helm template oci://${registry.host}/charts/nope`),
    );
    const state = await readTrackState(fixture.deps.state, track.name);
    assert.equal(state.appliedRevision, null);
    const configMaps = await fixture.core.listNamespacedConfigMap({ namespace: ns });
    assert.deepEqual(
      configMaps.items.map((c) => c.metadata?.name).filter((n) => n !== 'kube-root-ca.crt'),
      [],
    );
  });
});

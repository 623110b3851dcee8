/**
 * healthCheckExprs that can never judge health, end to end: on the real test
 * cluster a sync whose expression gives a string fails at once (not at the
 * track's timeout), naming the field, expression, object and type; the real
 * `driftless` command refuses an expression typed other than bool, and a
 * second entry for one apiVersion and kind, before doing anything.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { runDriftless } from '../harness/driftless-cli.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { pushFiles } from '../harness/git-server.ts';

const GROUP = 'cel.driftless.dev';

/** A CRD without a status subresource, so a Gadget's status is written with the object. */
const CRD = [
  'apiVersion: apiextensions.k8s.io/v1',
  'kind: CustomResourceDefinition',
  `metadata: {name: gadgets.${GROUP}}`,
  'spec:',
  `  group: ${GROUP}`,
  '  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}',
  '  scope: Namespaced',
  '  versions:',
  '    - name: v1',
  '      served: true',
  '      storage: true',
  '      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}',
  '',
].join('\n');

describe('healthCheckExprs that cannot give true or false', () => {
  const fixture = new TrackFixture('celtype');
  let work: string | undefined;

  before(async () => {
    await fixture.start();
    work = await mkdtemp(join(tmpdir(), 'driftless-celtype-'));
  });
  after(async () => {
    await fixture.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('fails the sync at once when an expression returns a string, naming it', async () => {
    // Prepare: the Gadget is written with status.phase; `current` returns that string.
    const { track, repo, ns } = await fixture.newTrack(
      'string',
      [
        'wait: true',
        'timeout: 60s',
        'healthCheckExprs:',
        `  - apiVersion: ${GROUP}/v1`,
        '    kind: Gadget',
        '    current: self.status.phase',
      ].join('\n'),
    );
    await pushFiles(repo, {
      'crd.yaml': CRD,
      'gadget.yaml': `apiVersion: ${GROUP}/v1\nkind: Gadget\nmetadata: {name: g}\nstatus: {phase: Ready}\n`,
    });

    // Act
    const started = performance.now();
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    const tookMs = performance.now() - started;

    // Assess: failed well before the minute's timeout, saying why.
    assert.equal(result.result, 'failed');
    assert.ok(tookMs < 30_000, `took ${tookMs} ms`);
    assert.equal(
      result.error,
      `not healthy: an object failed: Gadget/${ns}/g: healthCheckExprs[0].current "self.status.phase" returned type string, not bool (true or false)`,
    );
  });

  it('is refused by the driftless command when typed other than bool, or given twice', async () => {
    // Prepare
    const config = (entries: string[]) =>
      writeFile(
        join(work!, 'driftless.yaml'),
        [
          'tracks:',
          '  - name: web',
          '    repository: https://git.example.com/org/web.git',
          '    healthCheckExprs:',
          ...entries.map((entry) => `      - ${entry}`),
          '',
        ].join('\n'),
      );
    const env = { PATH: process.env.PATH, HOME: work };

    // Act
    await config([`{apiVersion: ${GROUP}/v1, kind: Gadget, current: '"status.phase"'}`]);
    const typed = await runDriftless(['status', '-c', 'driftless.yaml'], { cwd: work!, env });
    await config([
      `{apiVersion: ${GROUP}/v1, kind: Gadget, current: 'true'}`,
      `{apiVersion: ${GROUP}/v1, kind: Gadget, current: 'false'}`,
    ]);
    const twice = await runDriftless(['status', '-c', 'driftless.yaml'], { cwd: work!, env });

    // Assess
    assert.equal(typed.code, 2, typed.stderr);
    assert.equal(
      typed.stderr,
      'driftless: driftless.yaml: tracks[0].healthCheckExprs[0].current: "\\"status.phase\\"" has type string, not bool (true or false)\n',
    );
    assert.equal(twice.code, 2, twice.stderr);
    assert.equal(
      twice.stderr,
      `driftless: driftless.yaml: tracks[0].healthCheckExprs[1]: ${GROUP}/v1 Gadget is already checked by healthCheckExprs[0] (one entry per apiVersion and kind)\n`,
    );
  });
});

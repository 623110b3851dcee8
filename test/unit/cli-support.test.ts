import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { colourWanted } from '../../src/cli/colours.ts';
import { storePortConfig } from '../../src/sync/local-context.ts';
import { gitCacheDir } from '../../src/config/git-cache-dir.ts';
import { Output } from '../../src/cli/output.ts';
import { formatSyncResult } from '../../src/cli/sync-command.ts';
import { emptyTrackState } from '../../src/sync/track-state.ts';
import { readSecret, SecretUnavailableError } from '../../src/config/read-secret.ts';
import { inDependencyOrder } from '../../src/cli/select-tracks.ts';
import { MissingEnvError, parseConfig } from '../../src/config/index.ts';
import { NotImplementedError } from '../../src/errors.ts';

describe('readSecret', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-secret-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads env: references through the environment it is given', async () => {
    // Act
    const value = await readSecret({ scheme: 'env', name: 'TOKEN' }, { TOKEN: 's3cret' });

    // Assess
    assert.equal(value, 's3cret');
  });

  it('names the variable when it is unset', async () => {
    // Act
    const reading = readSecret({ scheme: 'env', name: 'TOKEN' }, {});

    // Assess
    await assert.rejects(
      reading,
      (error) => error instanceof MissingEnvError && /TOKEN/.test(error.message),
    );
  });

  it('reads file: references without the trailing line break', async () => {
    // Prepare
    const path = join(dir, 'credentials');
    await writeFile(path, 'user:pass\n');

    // Act
    const value = await readSecret({ scheme: 'file', path }, {});

    // Assess
    assert.equal(value, 'user:pass');
  });

  it('names the reference when the file is missing', async () => {
    // Prepare
    const path = join(dir, 'missing');

    // Act
    const reading = readSecret({ scheme: 'file', path }, {});

    // Assess
    await assert.rejects(
      reading,
      (error) =>
        error instanceof SecretUnavailableError &&
        error.message === `secret file:${path}: file does not exist`,
    );
  });

  it('refuses AWS references as not implemented, naming them', async () => {
    // Act
    const reading = readSecret({ scheme: 'aws-ssm', name: '/prod/kubeconfig' }, {});

    // Assess
    await assert.rejects(
      reading,
      (error) =>
        error instanceof NotImplementedError && /aws-ssm:\/prod\/kubeconfig/.test(error.message),
    );
  });
});

describe('gitCacheDir', () => {
  it('puts the Git cache next to a filesystem store', () => {
    // Act
    const dir = gitCacheDir({ type: 'fs', path: '.driftless/store' }, {}, 'linux');

    // Assess
    assert.equal(dir, resolve('.driftless/git'));
  });

  it('uses the user cache directory when the store is S3', () => {
    // Prepare
    const store = { type: 's3' as const, bucket: 'b', prefix: '' };

    // Act
    const linux = gitCacheDir(store, { HOME: '/home/me' }, 'linux');
    const xdg = gitCacheDir(store, { HOME: '/home/me', XDG_CACHE_HOME: '/cache' }, 'linux');
    const mac = gitCacheDir(store, { HOME: '/Users/me' }, 'darwin');

    // Assess
    assert.equal(linux, '/home/me/.cache/driftless/git');
    assert.equal(xdg, '/cache/driftless/git');
    assert.equal(mac, '/Users/me/Library/Caches/driftless/git');
  });
});

describe('storePortConfig', () => {
  it('maps the config module s3 store onto the store port', () => {
    // Act
    const config = storePortConfig({
      type: 's3',
      bucket: 'b',
      prefix: 'p/',
      endpoint: 'http://m:9000',
    });

    // Assess
    assert.deepEqual(config, { type: 's3', bucket: 'b', prefix: 'p/', endpoint: 'http://m:9000' });
  });
});

describe('inDependencyOrder', () => {
  it('puts every track after its dependencies and keeps file order otherwise', () => {
    // Prepare
    const config = parseConfig(
      [
        'tracks:',
        '  - {name: app, repository: https://g.example/a.git, dependsOn: [db, infra]}',
        '  - {name: db, repository: https://g.example/d.git, dependsOn: [infra]}',
        '  - {name: other, repository: https://g.example/o.git}',
        '  - {name: infra, repository: https://g.example/i.git}',
      ].join('\n'),
      'driftless.yaml',
    );

    // Act
    const order = inDependencyOrder(config.tracks).map((t) => t.name);

    // Assess
    assert.deepEqual(order, ['infra', 'db', 'app', 'other']);
  });
});

describe('colour and progress', () => {
  it('colours only a terminal, and never with NO_COLOR set', () => {
    // Act & Assess
    assert.equal(colourWanted({ isTTY: true }, {}), true);
    assert.equal(colourWanted({ isTTY: true }, { NO_COLOR: '1' }), false);
    assert.equal(colourWanted({ isTTY: false }, {}), false);
    assert.equal(colourWanted({}, {}), false);
  });

  it('draws progress on a terminal stderr only', () => {
    // Prepare
    let tty = '';
    let pipe = '';
    const onTty = new Output({
      stdout: { write: () => true },
      stderr: { write: (t: string) => (tty += t), isTTY: true },
      env: {},
    });
    const onPipe = new Output({
      stdout: { write: () => true },
      stderr: { write: (t: string) => (pipe += t) },
      env: {},
    });

    // Act
    for (const output of [onTty, onPipe]) {
      const progress = output.progress('web: applying');
      progress.update(1, 2);
      progress.update(2, 2);
      progress.end();
    }

    // Assess
    assert.equal(pipe, '');
    assert.match(tty, /web: applying 2\/2/);
    assert.ok(tty.endsWith('\r\u001b[K'));
  });
});

describe('sync text report', () => {
  it('says a superseded sync was superseded, and every result says something', () => {
    // Prepare
    const output = new Output({
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: {},
    });
    const base = {
      track: 'web',
      revision: 'a'.repeat(40),
      changeset: [],
      state: emptyTrackState(),
    };

    // Act
    const texts = (['applied', 'unchanged', 'pinned', 'superseded', 'failed'] as const).map(
      (result) => formatSyncResult({ ...base, result }, output),
    );

    // Assess
    assert.equal(texts[3], `web: superseded at aaaaaaaaaaaa; a revision resolved later is desired`);
    assert.ok(texts.every((text) => text.startsWith('web: ')));
  });
});

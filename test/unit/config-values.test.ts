import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MissingEnvError,
  formatResourceType,
  formatSecretRef,
  isSemverRange,
  parseDuration,
  parseResourceType,
  parseSecretRef,
  readEnv,
  readOptionalEnv,
} from '../../src/config/index.ts';
import { classifyRepository, parseSshLocation } from '../../src/config/repository-location.ts';

describe('parseDuration', () => {
  it('parses Go-style durations to milliseconds', () => {
    // Prepare
    const inputs = ['30s', '5m', '1h30m', '1.5h', '500ms', '2m0s'];

    // Act
    const results = inputs.map(parseDuration);

    // Assess
    assert.deepEqual(results, [30_000, 300_000, 5_400_000, 5_400_000, 500, 120_000]);
  });

  it('refuses text that is not a duration', () => {
    // Prepare
    const inputs = ['5x', '300', '', 'm', '5 m', '-5m', '1d'];

    // Act
    const results = inputs.map(parseDuration);

    // Assess
    assert.deepEqual(
      results,
      inputs.map(() => undefined),
    );
  });
});

describe('isSemverRange', () => {
  it('accepts node-semver ranges', () => {
    // Prepare
    const ranges = ['>=1.2.0 <2', '^1.4', '~1.2.3', '1.x', '1.2.x || 2.x', '1.2.3 - 2.3.4', '*'];
    const loose = ['>= 1.2', 'v1.2.3', '~>1.2', '>=1.0.0-rc.1', '^1.2.3+build.5'];

    // Act
    const results = [...ranges, ...loose].map(isSemverRange);

    // Assess
    assert.ok(results.every(Boolean));
  });

  it('refuses what is not a range, and the empty range', () => {
    // Prepare
    const inputs = ['', 'latest', '1.2.3 foo', '>=>1', '1.2.3.4', '01.2.3', '1 || '];

    // Act
    const results = inputs.map(isSemverRange);

    // Assess
    assert.ok(results.every((valid) => !valid));
  });
});

describe('parseSecretRef', () => {
  it('parses every scheme', () => {
    // Prepare
    const inputs = [
      'env:GIT_TOKEN',
      'file:/run/secrets/token',
      'aws-secretsmanager:driftless/git',
      'aws-ssm:/driftless/git-token',
    ];

    // Act
    const refs = inputs.map(parseSecretRef);

    // Assess
    assert.deepEqual(refs, [
      { scheme: 'env', name: 'GIT_TOKEN' },
      { scheme: 'file', path: '/run/secrets/token' },
      { scheme: 'aws-secretsmanager', id: 'driftless/git' },
      { scheme: 'aws-ssm', name: '/driftless/git-token' },
    ]);
    assert.deepEqual(
      refs.map((ref) => ('error' in ref ? ref.error : formatSecretRef(ref))),
      inputs,
    );
  });

  it('explains an unknown scheme or a bad name', () => {
    // Prepare
    const inputs = ['vault:x', 'GIT_TOKEN', 'env:1ABC', 'file:'];

    // Act
    const errors = inputs.map((text) => {
      const ref = parseSecretRef(text);
      return 'error' in ref ? ref.error : undefined;
    });

    // Assess
    assert.deepEqual(errors, [
      '"vault:x" is not a secret reference (use env:NAME, file:PATH, aws-secretsmanager:ID or aws-ssm:/path)',
      '"GIT_TOKEN" is not a secret reference (use env:NAME, file:PATH, aws-secretsmanager:ID or aws-ssm:/path)',
      '"env:1ABC" does not name a valid environment variable',
      '"file:" does not name a file',
    ]);
  });
});

describe('parseResourceType', () => {
  it('parses the Faros form, with no group part for the core group', () => {
    // Prepare
    const inputs = ['jobs.batch/v1', 'ingresses.networking.k8s.io/v1', 'configmaps/v1'];

    // Act
    const types = inputs.map(parseResourceType);

    // Assess
    assert.deepEqual(types, [
      { resource: 'jobs', group: 'batch', version: 'v1' },
      { resource: 'ingresses', group: 'networking.k8s.io', version: 'v1' },
      { resource: 'configmaps', group: '', version: 'v1' },
    ]);
    assert.deepEqual(
      types.map((t) => (t ? formatResourceType(t) : undefined)),
      inputs,
    );
  });

  it('refuses kinds, missing versions and other forms', () => {
    // Prepare
    const inputs = ['Job.batch/v1', 'jobs.batch', 'configmaps.v1', 'jobs.batch/1', '/v1'];

    // Act
    const types = inputs.map(parseResourceType);

    // Assess
    assert.deepEqual(
      types,
      inputs.map(() => undefined),
    );
  });
});

describe('classifyRepository', () => {
  it('accepts http(s) URLs, file URLs and local paths', () => {
    // Prepare
    const inputs = [
      'https://h/o/r.git',
      'http://127.0.0.1:3000/r.git',
      'file:///srv/r',
      './repo',
      '/srv/r',
    ];

    // Act
    const kinds = inputs.map(classifyRepository);

    // Assess
    assert.deepEqual(kinds, [
      { kind: 'http' },
      { kind: 'http' },
      { kind: 'file' },
      { kind: 'path' },
      { kind: 'path' },
    ]);
  });

  it('classifies SSH in both of its spellings and refuses other schemes', () => {
    // Prepare
    const inputs = ['git@github.com:o/r.git', 'github.com:o/r.git', 'ssh://git@h/r', 'git://h/r'];

    // Act
    const kinds = inputs.map((text) => classifyRepository(text));

    // Assess
    assert.deepEqual(kinds.slice(0, 3), [{ kind: 'ssh' }, { kind: 'ssh' }, { kind: 'ssh' }]);
    const refused = kinds[3]!;
    assert.ok('error' in refused);
    assert.match(refused.error, /unsupported scheme git:\/\//);
  });

  it('refuses credentials in a URL of any scheme before any other check, never quoting them', () => {
    // Prepare: each would fail another check first (scheme, port, leading space) or be accepted.
    const inputs = [
      'git://deploy:SECRET@host/app.git',
      'https://deploy:SECRET@127.0.0.1:99999/app.git',
      'file://deploy:SECRET@localhost/srv/app',
      'file://SECRET@localhost/srv/app',
      ' https://deploy:SECRET@host/app.git',
      '\thttps://SECRET@host/app.git',
      'HTTPS://SECRET@host/app.git',
      'https:///deploy:SECRET@host:99999/app.git',
      'ftp://SECRET@host/app.git',
      'ssh://deploy:SECRET@host/app.git',
      'deploy:SECRET@host:app.git',
    ];

    // Act
    const results = inputs.map((text) => classifyRepository(text));

    // Assess
    assert.deepEqual(
      results,
      inputs.map(() => ({
        error:
          'must not contain credentials (they would appear in logs and status); use auth instead',
      })),
    );
  });

  it('keeps an SSH user, and refuses a URL with spaces around it rather than take it for a path', () => {
    // Act
    const results = [
      'ssh://deploy@host/app.git',
      'deploy@host:app.git',
      'file:///srv/a@b/app',
      ' https://host/app.git',
      'https://host/app.git\n',
    ].map((text) => classifyRepository(text));

    // Assess
    assert.deepEqual(results, [
      { kind: 'ssh' },
      { kind: 'ssh' },
      { kind: 'file' },
      { error: '" https://host/app.git" has white space or control characters around it' },
      { error: '"https://host/app.git\\n" has white space or control characters around it' },
    ]);
  });

  it('reads the parts of SSH locations as git does', () => {
    // Act
    const parts = [
      'git@github.com:org/repo.git',
      'example.org:repo',
      'ssh://deploy@[::1]:2222/srv/git/repo.git',
      'git+ssh://h/~/repo.git',
      'ssh://h/',
    ].map((text) => parseSshLocation(text));

    // Assess
    assert.deepEqual(parts, [
      { user: 'git', host: 'github.com', port: 22, path: 'org/repo.git' },
      { user: 'git', host: 'example.org', port: 22, path: 'repo' },
      { user: 'deploy', host: '::1', port: 2222, path: '/srv/git/repo.git' },
      { user: 'git', host: 'h', port: 22, path: '~/repo.git' },
      undefined,
    ]);
  });
});

describe('readEnv', () => {
  it('returns a set variable', () => {
    // Prepare
    const env = { GIT_TOKEN: 't0ken' };

    // Act
    const value = readEnv('GIT_TOKEN', env);

    // Assess
    assert.equal(value, 't0ken');
  });

  it('names a missing or empty variable', () => {
    // Prepare
    const env = { EMPTY: '' };
    const names = ['MISSING', 'EMPTY'];

    // Act
    const errors = names.map((name) => {
      try {
        readEnv(name, env);
        return undefined;
      } catch (error) {
        return error;
      }
    });

    // Assess
    errors.forEach((error, index) => {
      assert.ok(error instanceof MissingEnvError);
      assert.equal(error.code, 'ENV_MISSING');
      assert.equal(error.variable, names[index]);
      assert.equal(error.message, `environment variable ${names[index]} is not set`);
    });
    assert.equal(readOptionalEnv('EMPTY', env), undefined);
  });
});

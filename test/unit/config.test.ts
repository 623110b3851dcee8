import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, parseConfig, type Config } from '../../src/config/index.ts';

const FIXTURE = 'test/fixtures/config/design-example.yaml';

/** The messages of the ConfigError `parse` throws, one per issue. */
function problems(text: string, fileName = 'driftless.yaml'): string[] {
  try {
    parseConfig(text, fileName);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.equal(error.code, 'CONFIG_INVALID');
    assert.equal(error.message, error.issues.map((i) => lineOf(i, fileName)).join('\n'));
    return error.message.split('\n');
  }
  assert.fail('expected the config to be refused');
}

function lineOf(issue: ConfigError['issues'][number], fileName: string): string {
  const where = issue.line === undefined ? fileName : `${fileName}:${issue.line}:${issue.column}`;
  return issue.path === ''
    ? `${where}: ${issue.message}`
    : `${where}: ${issue.path}: ${issue.message}`;
}

/** A config with one valid track plus `extra` lines inside that track. */
function oneTrack(extra = ''): string {
  return `tracks:\n  - name: web\n    repository: https://git.example.com/org/web.git\n${extra}`;
}

describe('loadConfig', () => {
  it('parses the DESIGN.md example with its defaults', async () => {
    // Prepare
    const file = FIXTURE;

    // Act
    const config = await loadConfig(file);

    // Assess
    assert.deepEqual(config.store, {
      type: 's3',
      bucket: 'my-bucket',
      prefix: 'driftless/',
      endpoint: 'http://127.0.0.1:9000',
    });
    assert.deepEqual(config.clusters, [
      {
        name: 'prod',
        credentials: { type: 'kubeconfig', path: '~/.kube/config' },
        context: 'prod-admin',
      },
    ]);
    assert.deepEqual(config.webhooks, {
      github: { secrets: [{ scheme: 'env', name: 'GITHUB_WEBHOOK_SECRET' }] },
    });
    assert.deepEqual(config.tracks[0], {
      name: 'webapp',
      cluster: 'prod',
      repository: 'https://git.example.com/org/manifests.git',
      semver: '>=1.2.0 <2',
      subPath: 'deploy/prod',
      namespace: 'apps',
      restrictNamespace: false,
      ignoreResources: [{ resource: 'jobs', group: 'batch', version: 'v1' }],
      prune: true,
      adopt: false,
      force: false,
      deletionPolicy: 'MirrorPrune',
      allowEmpty: false,
      interval: 300_000,
      drift: 'correct',
      ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment', name: 'web' } }],
      dependsOn: ['infra'],
      wait: false,
      healthChecks: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'apps' }],
      timeout: 120_000,
      suspend: false,
      auth: { type: 'basic', secret: { scheme: 'env', name: 'GIT_CREDENTIALS' } },
      kustomize: 'auto',
      kustomizeRemoteResources: false,
      substitute: {},
      substituteFrom: [],
      rules: [],
    });
  });

  it('reports a missing file by the name the user gave', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-config-'));
    const file = join(dir, 'driftless.yaml');

    try {
      // Act
      const result = loadConfig(file);

      // Assess
      await assert.rejects(result, (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.message, `${file}: file does not exist`);
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a file from disk', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-config-'));
    const file = join(dir, 'driftless.yaml');
    await writeFile(file, oneTrack());

    try {
      // Act
      const config = await loadConfig(file);

      // Assess
      assert.deepEqual(
        config.tracks.map((t) => t.name),
        ['web'],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('parseConfig defaults', () => {
  it('gives a track every default DESIGN.md shows', () => {
    // Prepare
    const text = oneTrack();

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.deepEqual(config.tracks, [
      {
        name: 'web',
        cluster: 'default',
        repository: 'https://git.example.com/org/web.git',
        reference: 'main',
        restrictNamespace: false,
        ignoreResources: [],
        prune: true,
        adopt: false,
        force: false,
        deletionPolicy: 'MirrorPrune',
        allowEmpty: false,
        interval: 300_000,
        drift: 'correct',
        ignore: [],
        dependsOn: [],
        wait: false,
        healthChecks: [],
        timeout: 120_000,
        suspend: false,
        kustomize: 'auto',
        kustomizeRemoteResources: false,
        substitute: {},
        substituteFrom: [],
        rules: [],
      },
    ]);
  });

  it('accepts an empty file as a config without tracks', () => {
    // Prepare
    const expected: Config = {
      store: { type: 'fs', path: '.driftless/store' },
      clusters: [{ name: 'default', credentials: { type: 'kubeconfig' } }],
      webhooks: {},
      tracks: [],
      tracksFrom: [],
      notifications: [],
    };

    // Act
    const results = ['', '# nothing yet\n', '---\n', 'tracks:\n'].map((text) =>
      parseConfig(text, 'driftless.yaml'),
    );

    // Assess
    for (const config of results) assert.deepEqual(config, expected);
  });

  it('parses durations to milliseconds', () => {
    // Prepare
    const text = oneTrack('    interval: 1h30m\n    timeout: 90s\n');

    // Act
    const [track] = parseConfig(text, 'driftless.yaml').tracks;

    // Assess
    assert.equal(track?.interval, 5_400_000);
    assert.equal(track?.timeout, 90_000);
  });

  it('resolves the only cluster for a track that names none', () => {
    // Prepare
    const text = `clusters:\n  - name: prod\n    eks: {name: main, region: eu-west-1}\n${oneTrack()}`;

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.equal(config.tracks[0]?.cluster, 'prod');
    assert.deepEqual(config.clusters[0]?.credentials, {
      type: 'eks',
      name: 'main',
      region: 'eu-west-1',
    });
  });

  it('normalises webhook secrets to a list and sub paths to their plain form', () => {
    // Prepare
    const text = `webhooks:
  gitlab: {secrets: [env:NEW, "aws-ssm:/driftless/old"]}
  generic: {secret: "file:/run/secret"}
${oneTrack('    subPath: ./deploy//prod/\n    ignoreResources: [configmaps/v1]\n')}`;

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.deepEqual(config.webhooks, {
      gitlab: {
        secrets: [
          { scheme: 'env', name: 'NEW' },
          { scheme: 'aws-ssm', name: '/driftless/old' },
        ],
      },
      generic: { secrets: [{ scheme: 'file', path: '/run/secret' }] },
    });
    assert.equal(config.tracks[0]?.subPath, 'deploy/prod');
    assert.deepEqual(config.tracks[0]?.ignoreResources, [
      { resource: 'configmaps', group: '', version: 'v1' },
    ]);
  });
});

describe('parseConfig errors', () => {
  it('names an unknown field and suggests the one meant', () => {
    // Prepare
    const text = oneTrack('    intervall: 5m\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].intervall: unknown field; did you mean interval?',
    ]);
  });

  it('quotes the value and what is accepted: a choice of values, a variable name', () => {
    // Prepare
    const text = oneTrack('    kustomize: "yes"\n    substitute: {1X: a, ok: b}\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].kustomize: "yes" is not auto, true or false',
      'driftless.yaml: tracks[0].substitute["1X"]: "1X" is not a variable name (letters, digits and _, not starting with a digit)',
    ]);
  });

  it('quotes a bad duration', () => {
    // Prepare
    const text = `${oneTrack()}  - name: a\n    repository: https://h/a.git\n  - name: b\n    repository: https://h/b.git\n    interval: 5x\n`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[2].interval: "5x" is not a duration (use e.g. 30s, 5m, 1h30m)',
    ]);
  });

  it('refuses an interval under 10s', () => {
    // Prepare
    const text = oneTrack('    interval: 5s\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, ['driftless.yaml: tracks[0].interval: "5s" is shorter than 10s']);
  });

  it('refuses a dashboard JWT issuer that is not https, naming the field', () => {
    // Prepare
    const text = `${oneTrack()}dashboard:\n  authorizer:\n    type: jwt\n    issuer: http://login.example.com\n    audience: [driftless]\n`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: dashboard.authorizer.issuer: "http://login.example.com" is not an https URL (API Gateway reads the issuer over HTTPS)',
    ]);
  });

  it('refuses a duplicate track name', () => {
    // Prepare
    const text = `${oneTrack()}  - name: web\n    repository: https://h/other.git\n`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[1].name: "web" is already used by tracks[0]',
    ]);
  });

  it('requires a cluster when several are defined, and refuses an unknown one', () => {
    // Prepare
    const text = `clusters:
  - {name: prod, kubeconfig: /k/prod}
  - {name: dev, kubeconfig: /k/dev}
${oneTrack()}  - name: api
    cluster: staging
    repository: https://h/api.git
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].cluster: is required when several clusters are defined (prod, dev)',
      'driftless.yaml: tracks[1].cluster: "staging" is not a cluster; defined: prod, dev',
    ]);
  });

  it('refuses a dependsOn that names no track', () => {
    // Prepare
    const text = oneTrack('    dependsOn: [infra]\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, ['driftless.yaml: tracks[0].dependsOn[0]: "infra" is not a track']);
  });

  it('names a dependsOn cycle', () => {
    // Prepare
    const text = `tracks:
  - {name: a, repository: https://h/a.git, dependsOn: [b]}
  - {name: b, repository: https://h/b.git, dependsOn: [c]}
  - {name: c, repository: https://h/c.git, dependsOn: [a]}
  - {name: d, repository: https://h/d.git, dependsOn: [d]}
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].dependsOn: dependency cycle: a -> b -> c -> a',
      'driftless.yaml: tracks[3].dependsOn: dependency cycle: d -> d',
    ]);
  });

  it('accepts SSH repositories in both spellings with ssh auth', () => {
    // Prepare
    const text = `tracks:
  - name: a
    repository: "git@github.com:org/a.git"
    auth: {type: ssh, secret: env:DEPLOY_KEY, knownHosts: env:KNOWN_HOSTS}
  - name: b
    repository: "ssh://git@github.com:2222/org/b.git"
    auth: {type: ssh, secret: env:DEPLOY_KEY, knownHosts: env:KNOWN_HOSTS, passphrase: env:KEY_PASSPHRASE}
`;

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.deepEqual(config.tracks[0]?.auth, {
      type: 'ssh',
      secret: { scheme: 'env', name: 'DEPLOY_KEY' },
      knownHosts: { scheme: 'env', name: 'KNOWN_HOSTS' },
    });
    assert.deepEqual(config.tracks[1]?.auth, {
      type: 'ssh',
      secret: { scheme: 'env', name: 'DEPLOY_KEY' },
      knownHosts: { scheme: 'env', name: 'KNOWN_HOSTS' },
      passphrase: { scheme: 'env', name: 'KEY_PASSPHRASE' },
    });
  });

  it('refuses SSH repositories without ssh auth, ssh auth elsewhere, and keys without known hosts', () => {
    // Prepare
    const text = `tracks:
  - {name: a, repository: "git@github.com:org/a.git"}
  - {name: b, repository: "ssh://git@github.com/org/b.git", auth: {type: token, secret: env:T}}
  - {name: c, repository: "https://github.com/org/c.git", auth: {type: ssh, secret: env:K, knownHosts: env:H}}
  - {name: d, repository: "ssh://git@github.com/org/d.git", auth: {type: ssh, secret: env:K}}
  - {name: e, repository: "ssh://git:hunter2@github.com/org/e.git", auth: {type: ssh, secret: env:K, knownHosts: env:H}}
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].auth: an SSH repository needs auth: {type: ssh, secret: <private key>, knownHosts: <known_hosts lines>}',
      'driftless.yaml: tracks[1].auth: an SSH repository needs auth: {type: ssh, secret: <private key>, knownHosts: <known_hosts lines>}',
      'driftless.yaml: tracks[2].auth.type: ssh is for ssh:// and user@host:path repositories',
      'driftless.yaml: tracks[3].auth.knownHosts: is required',
      'driftless.yaml: tracks[4].repository: must not contain credentials (they would appear in logs and status); use auth instead',
    ]);
  });

  it('refuses serviceAccountName without a namespace for the account, and a malformed one', () => {
    // Prepare
    const text = `tracks:
  - {name: a, repository: https://h/a.git, serviceAccountName: deployer}
  - {name: b, repository: https://h/b.git, namespace: apps, serviceAccountName: Deployer_1}
  - {name: c, repository: https://h/c.git, targetNamespace: apps, serviceAccountName: deployer}
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].serviceAccountName: needs namespace (or targetNamespace): the service account lives there',
      `driftless.yaml: tracks[1].serviceAccountName: "Deployer_1" is not a valid name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
    ]);
  });

  it('refuses reference and semver together', () => {
    // Prepare
    const text = oneTrack('    reference: main\n    semver: ^1.2\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].semver: reference and semver cannot be used together; use one of reference, semver',
    ]);
  });

  it('refuses a subPath that leaves the repository', () => {
    // Prepare
    const text = `tracks:
  - {name: a, repository: https://h/a.git, subPath: deploy/../../etc}
  - {name: b, repository: https://h/b.git, subPath: /etc}
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].subPath: "deploy/../../etc" must not contain ".." (it would leave the repository)',
      'driftless.yaml: tracks[1].subPath: "/etc" must be a relative path with "/" separators',
    ]);
  });

  it('refuses a secret reference with an unknown scheme, naming the field', () => {
    // Prepare
    const text = `webhooks:\n  github: {secret: "vault:kv/github"}\n${oneTrack('    auth: {type: token, secret: "env:"}\n')}`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: webhooks.github.secret: "vault:kv/github" is not a secret reference (use env:NAME, file:PATH, aws-secretsmanager:ID or aws-ssm:/path)',
      'driftless.yaml: tracks[0].auth.secret: "env:" does not name a valid environment variable',
    ]);
  });

  it('refuses a bad semver range and a misshapen ignored resource', () => {
    // Prepare
    const text = oneTrack('    semver: ">=1.2 banana"\n    ignoreResources: [Job.batch/v1]\n');

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].semver: ">=1.2 banana" is not a semver range',
      'driftless.yaml: tracks[0].ignoreResources[0]: "Job.batch/v1" is not <resource>.<group>/<version> (e.g. jobs.batch/v1, or configmaps/v1 for the core group)',
    ]);
  });

  it('refuses an ignore rule whose labelSelector cannot be read, when the config loads', () => {
    // Prepare
    const text = oneTrack(
      '    ignore:\n      - paths: [/spec/replicas]\n        target: {labelSelector: "app in (web"}\n',
    );

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].ignore[0].target.labelSelector: "app in (web" is not a label selector requirement',
    ]);
  });

  it('reports a YAML syntax error with line and column', () => {
    // Prepare
    const text = 'tracks:\n  - name: web\n    repository: [\n';

    // Act
    const messages = problems(text);

    // Assess
    assert.equal(messages.length, 1);
    assert.match(messages[0] ?? '', /^driftless\.yaml:4:1: invalid YAML: /);
  });

  it('reports every problem of the file at once, in file order', () => {
    // Prepare
    const text = `store: {type: s3}
clusters:
  - {name: prod, kubeconfig: /k, eks: {name: c, region: r}}
tracks:
  - name: a
    repository: https://h/a.git
    interval: soon
    dependsOn: [b, ghost]
    prune: "yes"
  - name: b
    repository: https://user:secret@h/b.git
    dependsOn: [a]
    drift: fix
`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: store.bucket: is required',
      'driftless.yaml: clusters[0].eks: kubeconfig and eks cannot be used together; use one of kubeconfig, kubeconfigSecret, eks',
      'driftless.yaml: tracks[0].prune: "yes" is not true or false',
      'driftless.yaml: tracks[0].interval: "soon" is not a duration (use e.g. 30s, 5m, 1h30m)',
      'driftless.yaml: tracks[0].dependsOn[1]: "ghost" is not a track',
      'driftless.yaml: tracks[0].dependsOn: dependency cycle: a -> b -> a',
      'driftless.yaml: tracks[1].repository: must not contain credentials (they would appear in logs and status); use auth instead',
      'driftless.yaml: tracks[1].drift: "fix" is not one of correct, detect',
    ]);
  });

  it('refuses documents that are neither the config nor a GitTrack', () => {
    // Prepare
    const text = `${oneTrack()}---\napiVersion: apps/v1\nkind: Deployment\n---\nstore: {type: fs}\n`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: documents[1]: apiVersion "apps/v1", kind "Deployment" is not supported; only faros.pusher.com/v1alpha1 GitTrack documents may accompany the configuration',
      'driftless.yaml: documents[2]: is a second configuration document; keep all settings in documents[0]',
    ]);
  });
});

describe('parseConfig with Faros GitTracks', () => {
  const gitTrack = (spec: string, metadata = '{name: infra, namespace: kube-system}'): string =>
    `---\napiVersion: faros.pusher.com/v1alpha1\nkind: GitTrack\nmetadata: ${metadata}\nspec:\n${spec}`;

  it('maps a GitTrack onto a track, with an HTTPBasicAuth deploy key as an env secret', () => {
    // Prepare
    const text = `${oneTrack()}${gitTrack(`  repository: https://github.com/org/infra.git
  reference: master
  subPath: ./cluster/
  deployKey: {secretName: git-creds.v2, key: password, type: HTTPBasicAuth}
`)}`;

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.deepEqual(
      config.tracks.map((t) => t.name),
      ['web', 'infra'],
    );
    const infra = config.tracks[1];
    assert.equal(infra?.namespace, 'kube-system');
    assert.equal(infra?.repository, 'https://github.com/org/infra.git');
    assert.equal(infra?.reference, 'master');
    assert.equal(infra?.subPath, 'cluster');
    assert.equal(infra?.prune, true);
    assert.deepEqual(infra?.auth, {
      type: 'basic',
      secret: { scheme: 'env', name: 'GIT_CREDS_V2_PASSWORD' },
    });
  });

  it('accepts a file of GitTracks only', () => {
    // Prepare
    const text = gitTrack('  repository: https://h/infra.git\n  reference: main\n');

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    assert.equal(config.tracks[0]?.name, 'infra');
    assert.equal(config.tracks[0]?.auth, undefined);
  });

  it('maps an SSH deploy key, also when the type is left to its Faros default', () => {
    // Prepare
    const text = `${oneTrack()}${gitTrack(`  repository: git@github.com:org/infra.git
  reference: master
  deployKey: {secretName: git-creds, key: id_rsa, type: SSH}
`)}${gitTrack(
      `  repository: ssh://git@github.com/org/apps.git\n  reference: master\n  deployKey: {secretName: git-creds, key: id_rsa}\n`,
      '{name: apps}',
    )}`;

    // Act
    const config = parseConfig(text, 'driftless.yaml');

    // Assess
    const expected = {
      type: 'ssh',
      secret: { scheme: 'env', name: 'GIT_CREDS_ID_RSA' },
      knownHosts: { scheme: 'env', name: 'GIT_CREDS_KNOWN_HOSTS' },
    };
    assert.deepEqual(config.tracks[1]?.auth, expected);
    assert.deepEqual(config.tracks[2]?.auth, expected);
  });

  it('refuses an SSH deploy key on an HTTPS repository and an SSH repository without one, at the GitTrack path', () => {
    // Prepare
    const text = `${oneTrack()}${gitTrack(`  repository: https://h/infra.git
  reference: master
  deployKey: {secretName: git-creds, key: id_rsa, type: SSH}
`)}${gitTrack(`  repository: git@h:org/apps.git\n  reference: master\n`, '{name: apps}')}`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: documents[1].spec.deployKey: ssh is for ssh:// and user@host:path repositories',
      'driftless.yaml: documents[2].spec.deployKey: an SSH repository needs auth: {type: ssh, secret: <private key>, knownHosts: <known_hosts lines>}',
    ]);
  });

  it('reports GitTrack problems at the GitTrack path', () => {
    // Prepare
    const text = `${oneTrack()}${gitTrack(
      '  repository: "ftp://github.com/org/x.git"\n  subpath: deploy\n',
      '{name: web}',
    )}`;

    // Act
    const messages = problems(text);

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: documents[1].spec.subpath: unknown field; did you mean subPath?',
      'driftless.yaml: documents[1].spec.repository: "ftp://github.com/org/x.git" uses the unsupported scheme ftp://; use https://, http://, ssh://, user@host:path, file:// or a local path',
      'driftless.yaml: documents[1].metadata.name: "web" is already used by tracks[0]',
    ]);
  });

  it('says a mapping is expected where a GitTrack has another value', () => {
    // Act
    const messages = problems(
      `${oneTrack()}${gitTrack('  repository: "https://github.com/org/x.git"\n', '{name: other, annotations: 5}')}`,
    );

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: documents[1].metadata.annotations: 5 is not a mapping',
    ]);
  });
});

describe('bucket tracks', () => {
  const bucketTrack = (extra = '') =>
    `tracks:\n  - name: b\n    bucket: {name: manifests, prefix: prod/, endpoint: "http://127.0.0.1:9000"}\n${extra}`;

  it('derives an s3:// repository for people and metrics, and no reference', () => {
    const [track] = parseConfig(
      bucketTrack('    auth: {type: s3, secret: env:CREDS}\n'),
      'd.yaml',
    ).tracks;
    assert.equal(track?.repository, 's3://manifests/prod/');
    assert.deepEqual(track?.bucket, {
      name: 'manifests',
      prefix: 'prod/',
      endpoint: 'http://127.0.0.1:9000',
    });
    assert.equal(track?.reference, undefined);
  });

  it('refuses Git-only fields on a bucket, s3 auth on Git, Git auth on a bucket, and both sources', () => {
    const gitOnly = problems(bucketTrack('    reference: main\n    verify: {keys: [env:K]}\n'));
    assert.equal(gitOnly.length, 2);
    assert.match(
      gitOnly[0]!,
      /tracks\[0\]\.reference: applies to Git repositories, not to a bucket/,
    );
    assert.match(gitOnly[1]!, /tracks\[0\]\.verify: applies to Git repositories, not to a bucket/);
    assert.match(
      problems(bucketTrack('    auth: {type: token, secret: env:T}\n')).join('\n'),
      /tracks\[0\]\.auth\.type: token is for Git repositories; a bucket takes s3/,
    );
    assert.match(
      problems(
        'tracks:\n  - name: g\n    repository: https://x.example/r.git\n    auth: {type: s3, secret: env:C}\n',
      ).join('\n'),
      /tracks\[0\]\.auth\.type: s3 is for bucket tracks/,
    );
    assert.match(
      problems(bucketTrack('    repository: https://x.example/r.git\n')).join('\n'),
      /repository and bucket cannot be used together/,
    );
    assert.match(
      problems('tracks:\n  - name: none\n').join('\n'),
      /tracks\[0\]\.repository: is required \(or bucket:/,
    );
  });
});

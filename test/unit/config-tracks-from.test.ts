/**
 * `tracksFrom` in driftless.yaml, and the rules that keep a GitTrack read at
 * run time inside what its source allows (config/run-time-tracks.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import { runTimeTracks, type RunTimeDocument } from '../../src/config/run-time-tracks.ts';
import type { TracksFrom } from '../../src/config/types.ts';

function problems(text: string): string[] {
  try {
    parseConfig(text, 'driftless.yaml');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
  }
  assert.fail('expected the config to be refused');
}

const TWO_CLUSTERS = `clusters:
  - {name: prod, kubeconfig: /k/prod}
  - {name: staging, kubeconfig: /k/staging}
`;

describe('tracksFrom in driftless.yaml', () => {
  it('names each source stably and sends a repository source to the only cluster', () => {
    // Act
    const config = parseConfig(
      `tracksFrom:
  - {cluster: default, gitTracks: true}
  - repository: https://git.example.com/platform/tracks.git
    subPath: tracks
    deployKeySecrets: aws-secretsmanager:driftless/git/gittracks/
`,
      'driftless.yaml',
    );
    const again = parseConfig(
      'tracksFrom:\n  - {repository: https://git.example.com/platform/tracks.git, subPath: tracks}\n',
      'driftless.yaml',
    );

    // Assess
    const [cluster, repository] = config.tracksFrom;
    assert.deepEqual(cluster, {
      kind: 'cluster',
      id: 'cluster-default',
      cluster: 'default',
      allowLocalRepositories: false,
    });
    assert.equal(repository?.kind, 'repository');
    assert.match(repository?.id ?? '', /^repository-[0-9a-f]{12}$/);
    assert.equal(repository?.cluster, 'default');
    assert.equal(repository?.kind === 'repository' && repository.reference, 'main');
    assert.equal(repository?.deployKeySecrets, 'aws-secretsmanager:driftless/git/gittracks/');
    // The same repository, reference and subPath: the same id, whatever else changes.
    assert.equal(again.tracksFrom[0]?.id, repository?.id);
  });

  it('refuses sources that say too little, too much, or reach for any variable', () => {
    assert.deepEqual(
      problems(`${TWO_CLUSTERS}tracksFrom:
  - {cluster: prod}
  - {gitTracks: true}
  - {cluster: dev, gitTracks: true}
  - {repository: https://git.example.com/t.git}
  - {cluster: prod, gitTracks: true, reference: main}
  - {repository: https://git.example.com/t.git, gitTracks: true, cluster: prod}
  - {cluster: staging, gitTracks: true, deployKeySecrets: "env:"}
  - {cluster: prod, gitTracks: true}
  - {cluster: prod, gitTracks: true, allowLocalRepositories: true}
`),
      [
        'tracksFrom[0].gitTracks: must be true, or give repository: GitTracks are the only objects read from a cluster',
        'tracksFrom[1].cluster: is required: the cluster whose GitTracks are read (or give repository)',
        'tracksFrom[2].cluster: "dev" is not a defined cluster (clusters: prod, staging)',
        'tracksFrom[3].cluster: is required when there are several clusters (prod, staging)',
        'tracksFrom[4].reference: applies to a repository of track documents, not to a cluster',
        'tracksFrom[5].gitTracks: cannot be used with repository; use one entry per source',
        'tracksFrom[6].deployKeySecrets: "env:" is not the start of a secret reference (e.g. aws-secretsmanager:driftless/git/gittracks/ or env:GITTRACK_)',
        'tracksFrom[8]: reads the same source as tracksFrom[7]',
      ],
    );
  });
});

const SOURCE: TracksFrom = {
  kind: 'cluster',
  id: 'cluster-prod',
  cluster: 'prod',
  allowLocalRepositories: false,
  deployKeySecrets: 'env:GITTRACK_',
};

function gitTrack(
  name: string,
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
): RunTimeDocument {
  return {
    value: {
      apiVersion: 'faros.pusher.com/v1alpha1',
      kind: 'GitTrack',
      metadata: { name, namespace: 'apps', uid: 'u-1', ...(annotations ? { annotations } : {}) },
      spec: { repository: 'https://git.example.com/org/web.git', reference: 'main', ...spec },
    },
    where: `GitTrack apps/${name}`,
    origin: { source: SOURCE.id, gitTrack: { namespace: 'apps', name } },
  };
}

describe('runTimeTracks', () => {
  it('maps a GitTrack to a track of its source cluster, deploy key under the source prefix', () => {
    // Act
    const { tracks, problems } = runTimeTracks(
      SOURCE,
      [
        gitTrack(
          'web',
          {
            subPath: 'deploy',
            deployKey: { secretName: 'git-creds', key: 'password', type: 'HTTPBasicAuth' },
          },
          { 'driftless.dev/deletion-policy': 'Orphan' },
        ),
        gitTrack('api', {
          repository: 'ssh://git@git.example.com/org/api.git',
          deployKey: { secretName: 'deploy', key: 'id' },
        }),
      ],
      new Set(),
    );

    // Assess
    assert.deepEqual(problems, []);
    const [web, api] = tracks;
    assert.equal(web?.cluster, 'prod');
    assert.equal(web?.namespace, 'apps');
    assert.equal(web?.subPath, 'deploy');
    assert.equal(web?.deletionPolicy, 'Orphan');
    assert.deepEqual(web?.origin, {
      source: 'cluster-prod',
      gitTrack: { namespace: 'apps', name: 'web' },
    });
    assert.deepEqual(web?.auth, {
      type: 'basic',
      secret: { scheme: 'env', name: 'GITTRACK_APPS_GIT_CREDS_PASSWORD' },
    });
    // Faros' default deploy key type is SSH; its host keys come from the same secret.
    assert.deepEqual(api?.auth, {
      type: 'ssh',
      secret: { scheme: 'env', name: 'GITTRACK_APPS_DEPLOY_ID' },
      knownHosts: { scheme: 'env', name: 'GITTRACK_APPS_DEPLOY_KNOWN_HOSTS' },
    });
  });

  it('puts path-like deploy keys under <namespace>/<secret>/<key> of the prefix', () => {
    const source = { ...SOURCE, deployKeySecrets: 'aws-secretsmanager:driftless/git/gittracks/' };
    const { tracks } = runTimeTracks(
      source,
      [
        gitTrack('web', {
          deployKey: { secretName: 'git-creds', key: 'password', type: 'HTTPBasicAuth' },
        }),
      ],
      new Set(),
    );
    assert.deepEqual(tracks[0]?.auth, {
      type: 'basic',
      secret: {
        scheme: 'aws-secretsmanager',
        id: 'driftless/git/gittracks/apps/git-creds/password',
      },
    });
  });

  it('refuses, one GitTrack at a time, what its source does not allow', () => {
    // Act
    const { tracks, problems } = runTimeTracks(
      { ...SOURCE, deployKeySecrets: undefined },
      [
        gitTrack('other-cluster', {}, { 'driftless.dev/cluster': 'staging' }),
        gitTrack('local', { repository: '/srv/git/manifests' }),
        gitTrack('file-url', { repository: 'file:///srv/git/manifests' }),
        gitTrack('keyed', {
          deployKey: { secretName: 'git-creds', key: 'password', type: 'HTTPBasicAuth' },
        }),
        gitTrack('taken', {}),
        gitTrack('fine', {}),
        gitTrack('fine', { subPath: 'again' }),
        gitTrack('bad-policy', {}, { 'driftless.dev/deletion-policy': 'Sometimes' }),
        gitTrack('unknown-field', { branch: 'main' }),
        { ...gitTrack('not-a-gittrack', {}), value: { apiVersion: 'v1', kind: 'ConfigMap' } },
      ],
      new Set(['taken']),
    );

    // Assess: only "fine" is a track; every other one says why, under its own name.
    assert.deepEqual(
      tracks.map((t) => t.name),
      ['fine'],
    );
    const byWhere = Object.fromEntries(problems.map((p) => [p.where, p.message]));
    assert.match(
      byWhere['GitTrack apps/other-cluster']!,
      /"staging" is not allowed: tracks of this source reach only cluster "prod"/,
    );
    assert.match(
      byWhere['GitTrack apps/local']!,
      /spec\.repository: "\/srv\/git\/manifests" is a local repository/,
    );
    assert.match(byWhere['GitTrack apps/file-url']!, /is a local repository/);
    assert.match(
      byWhere['GitTrack apps/keyed']!,
      /spec\.deployKey: deploy keys of tracks read at run time need tracksFrom\[\]\.deployKeySecrets/,
    );
    assert.match(byWhere['GitTrack apps/taken']!, /track "taken" already exists/);
    assert.match(byWhere['GitTrack apps/fine']!, /track "fine" already exists/);
    assert.match(
      byWhere['GitTrack apps/bad-policy']!,
      /metadata\.annotations\["driftless\.dev\/deletion-policy"\]/,
    );
    assert.match(byWhere['GitTrack apps/unknown-field']!, /spec\.branch/);
    assert.match(byWhere['GitTrack apps/not-a-gittrack']!, /is not a Faros GitTrack/);
  });

  it('allows local repositories only when the source says so', () => {
    const { tracks, problems } = runTimeTracks(
      { ...SOURCE, allowLocalRepositories: true },
      [gitTrack('local', { repository: '/srv/git/manifests' })],
      new Set(),
    );
    assert.deepEqual(problems, []);
    assert.equal(tracks[0]?.repository, '/srv/git/manifests');
  });

  it('keeps a deploy key from climbing out of its prefix', () => {
    const { problems } = runTimeTracks(
      { ...SOURCE, deployKeySecrets: 'file:/etc/driftless/keys/' },
      [
        gitTrack('climb', { deployKey: { secretName: '..', key: 'x', type: 'HTTPBasicAuth' } }),
        gitTrack('climb-key', {
          deployKey: { secretName: 'ok', key: '../../shadow', type: 'HTTPBasicAuth' },
        }),
      ],
      new Set(),
    );
    assert.equal(problems.length, 2);
    for (const problem of problems)
      assert.match(problem.message, /must be a Kubernetes Secret's name and key/);
  });
});

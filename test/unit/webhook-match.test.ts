import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  matchTracks,
  normaliseRepositoryUrl,
  type MatchableTrack,
  type PushEvent,
} from '../../src/source/webhooks/index.ts';

const SHA = '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c';

/** A GitHub push of `ref` to Octo-Org/Manifests, with the URLs a GitHub payload carries. */
function push(ref: string, overrides: Partial<PushEvent> = {}): PushEvent {
  return {
    host: 'github',
    deliveryId: 'd1',
    repositoryUrls: [
      'https://github.com/Octo-Org/Manifests.git',
      'git@github.com:Octo-Org/Manifests.git',
      'https://github.com/Octo-Org/Manifests',
    ],
    ref,
    after: SHA,
    ...overrides,
  };
}

function track(name: string, fields: Partial<MatchableTrack> = {}): MatchableTrack {
  return {
    name,
    repository: 'https://github.com/octo-org/manifests.git',
    suspend: false,
    ...fields,
  };
}

describe('normaliseRepositoryUrl', () => {
  it('gives clone, SSH and web URLs of one repository the same identity', () => {
    // Prepare
    const urls = [
      'https://github.com/Octo-Org/Manifests.git',
      'https://github.com/Octo-Org/Manifests',
      'https://github.com/Octo-Org/Manifests/',
      'https://github.com/Octo-Org/Manifests.git/',
      'http://github.com/octo-org/manifests',
      'HTTPS://GitHub.com:443/Octo-Org/Manifests.git',
      'https://user:s3cr3t@github.com/Octo-Org/Manifests.git',
      'https://x-access-token@github.com/Octo-Org/Manifests.git',
      'git@github.com:Octo-Org/Manifests.git',
      'github.com:Octo-Org/Manifests',
      'ssh://git@github.com/Octo-Org/Manifests.git',
      'ssh://git@github.com:22/Octo-Org/Manifests.git',
      'git://github.com/Octo-Org/Manifests.git',
      ' https://github.com//Octo-Org/Manifests.git?x=1#readme ',
    ];

    // Act
    const normalised = new Set(urls.map(normaliseRepositoryUrl));

    // Assess
    assert.deepEqual([...normalised], ['github.com/octo-org/manifests']);
  });

  it('keeps nested groups and distinguishes other repositories', () => {
    // Prepare
    const urls = [
      'https://gitlab.example.com/platform/deploy/manifests.git',
      'git@gitlab.example.com:platform/deploy/manifests.git',
      'https://gitlab.example.com/platform/manifests.git',
      'https://gitlab.example.org/platform/deploy/manifests.git',
      'https://gitlab.example.com/platform/deploy/manifests.github',
    ];

    // Act
    const normalised = urls.map(normaliseRepositoryUrl);

    // Assess
    assert.deepEqual(normalised, [
      'gitlab.example.com/platform/deploy/manifests',
      'gitlab.example.com/platform/deploy/manifests',
      'gitlab.example.com/platform/manifests',
      'gitlab.example.org/platform/deploy/manifests',
      'gitlab.example.com/platform/deploy/manifests.github',
    ]);
  });

  it('leaves local paths recognisable and never matching a host', () => {
    // Prepare
    const paths = ['./manifests', '/srv/git/manifests.git', 'file:///srv/git/manifests.git', ''];

    // Act
    const normalised = paths.map(normaliseRepositoryUrl);

    // Assess
    assert.deepEqual(normalised, ['./manifests', '/srv/git/manifests', '/srv/git/manifests', '']);
  });
});

describe('matchTracks', () => {
  it('matches a track by any of the payload URLs, with or without .git', () => {
    // Prepare
    const tracks = [
      track('clone', { repository: 'https://github.com/Octo-Org/Manifests.git' }),
      track('web', { repository: 'https://github.com/octo-org/manifests' }),
      track('ssh-style', { repository: 'git@github.com:octo-org/manifests.git' }),
      track('credentials', { repository: 'https://bot:token@github.com/Octo-Org/Manifests.git' }),
      track('other-repo', { repository: 'https://github.com/Octo-Org/Other.git' }),
      track('other-host', { repository: 'https://ghe.example.com/Octo-Org/Manifests.git' }),
    ];

    // Act
    const names = matchTracks(push('refs/heads/main'), tracks);

    // Assess
    assert.deepEqual(names, ['clone', 'web', 'ssh-style', 'credentials']);
  });

  it('matches a Gitea push by its ssh:// URL with a port', () => {
    // Prepare
    const event = push('refs/heads/main', {
      host: 'gitea',
      repositoryUrls: ['ssh://git@gitea.example.com:2222/org/manifests.git'],
    });

    // Act
    const names = matchTracks(event, [
      track('web', { repository: 'https://gitea.example.com/org/manifests.git' }),
    ]);

    // Assess
    assert.deepEqual(names, ['web']);
  });

  it('matches branch tracks to pushes of that branch only', () => {
    // Prepare
    const tracks = [
      track('default'),
      track('short', { reference: 'main' }),
      track('full', { reference: 'refs/heads/main' }),
      track('other-branch', { reference: 'develop' }),
      track('full-tag', { reference: 'refs/tags/main' }),
    ];

    // Act
    const names = matchTracks(push('refs/heads/main'), tracks);

    // Assess
    assert.deepEqual(names, ['default', 'short', 'full']);
  });

  it('matches tag tracks to pushes of that tag only', () => {
    // Prepare
    const tracks = [
      track('short', { reference: 'v1.2.0' }),
      track('full', { reference: 'refs/tags/v1.2.0' }),
      track('branch', { reference: 'main' }),
      track('other-tag', { reference: 'v1.3.0' }),
      track('branch-ref', { reference: 'refs/heads/v1.2.0' }),
    ];

    // Act
    const names = matchTracks(push('refs/tags/v1.2.0'), tracks);

    // Assess
    assert.deepEqual(names, ['short', 'full']);
  });

  it('matches semver tracks to pushes of tags in their range', () => {
    // Prepare
    const tracks = [
      track('v1', { semver: '>=1.2.0 <2' }),
      track('caret', { semver: '^1.4' }),
      track('v2', { semver: '^2.0.0' }),
      track('prerelease-only', { semver: '>=1.5.0-rc.0 <1.6.0' }),
    ];

    // Act
    const matched = {
      prefixed: matchTracks(push('refs/tags/v1.4.2'), tracks),
      bare: matchTracks(push('refs/tags/1.4.2'), tracks),
      major: matchTracks(push('refs/tags/v2.0.1'), tracks),
      prerelease: matchTracks(push('refs/tags/v1.5.0-rc.1'), tracks),
      notSemver: matchTracks(push('refs/tags/release-1.4'), tracks),
      branchNamedLikeATag: matchTracks(push('refs/heads/v1.4.2'), tracks),
    };

    // Assess
    assert.deepEqual(matched, {
      prefixed: ['v1', 'caret'],
      bare: ['v1', 'caret'],
      major: ['v2'],
      prerelease: ['prerelease-only'],
      notSemver: [],
      branchNamedLikeATag: [],
    });
  });

  it('never matches a track pinned to a full commit sha', () => {
    // Prepare
    const tracks = [
      track('pinned', { reference: SHA }),
      track('pinned-upper', { reference: SHA.toUpperCase() }),
    ];

    // Act
    const names = [
      ...matchTracks(push('refs/heads/main'), tracks),
      ...matchTracks(push(`refs/heads/${SHA}`), tracks),
      ...matchTracks(push(`refs/tags/${SHA}`), tracks),
    ];

    // Assess
    assert.deepEqual(names, []);
  });

  it('matches HEAD tracks to pushes of the default branch', () => {
    // Prepare
    const tracks = [track('head', { reference: 'HEAD' })];

    // Act
    const matched = {
      defaultBranch: matchTracks(push('refs/heads/main', { defaultBranch: 'main' }), tracks),
      otherBranch: matchTracks(push('refs/heads/dev', { defaultBranch: 'main' }), tracks),
      unknownDefault: matchTracks(push('refs/heads/dev'), tracks),
      tag: matchTracks(push('refs/tags/v1.0.0'), tracks),
    };

    // Assess
    assert.deepEqual(matched, {
      defaultBranch: ['head'],
      otherBranch: [],
      unknownDefault: ['head'],
      tag: [],
    });
  });

  it('skips suspended tracks', () => {
    // Prepare
    const tracks = [track('active'), track('suspended', { suspend: true })];

    // Act
    const names = matchTracks(push('refs/heads/main'), tracks);

    // Assess
    assert.deepEqual(names, ['active']);
  });

  it('matches nothing for a payload whose URLs are empty', () => {
    // Prepare
    const event = push('refs/heads/main', { repositoryUrls: [''] });

    // Act
    const names = matchTracks(event, [track('local', { repository: '' })]);

    // Assess
    assert.deepEqual(names, []);
  });
});

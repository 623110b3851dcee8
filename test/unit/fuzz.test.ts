/**
 * Property-based fuzzing of the parsers that read what others write: the YAML
 * manifest reader, each Git host's webhook verifier and push parser, and the
 * config loader. Each property runs for a bounded time (FUZZ_MS, default
 * 10 s, stopped early by FUZZ_RUNS) from a fixed seed (FUZZ_SEED), so a
 * failure is reproduced by running this file again with the seed it prints.
 *
 * What holds for any input: nothing is thrown but our typed errors (a bug —
 * a TypeError, a RangeError — fails the property), and what is accepted
 * satisfies the invariants callers rely on; where a round trip exists
 * (manifest objects -> YAML -> objects, bundle -> bytes -> bundle), it holds.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import type { WebhookHost } from '../../src/config/types.ts';
import { DriftlessError } from '../../src/errors.ts';
import {
  parseBundle,
  parseRevision,
  serializeBundle,
  type JsonObject,
  type RevisionFile,
} from '../../src/render/index.ts';
import { receiveWebhook, type WebhookRequest } from '../../src/source/webhooks/index.ts';

const TIME_LIMIT_MS = Number(process.env.FUZZ_MS ?? 10_000);
const MAX_RUNS = Number(process.env.FUZZ_RUNS ?? 1_000_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
/** Only a hang guard: a property is interrupted after TIME_LIMIT_MS, so this is never reached normally. */
const TEST_TIMEOUT_MS = TIME_LIMIT_MS * 6 + 30_000;

/**
 * Runs `property` for the time limit, prints how many runs it made, and fails
 * with fast-check's report (seed and shrunk counterexample) when it fails.
 */
async function fuzz<Ts>(
  name: string,
  property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>,
): Promise<number> {
  const parameters: fc.Parameters<Ts> = {
    seed: SEED,
    numRuns: MAX_RUNS,
    interruptAfterTimeLimit: TIME_LIMIT_MS,
    markInterruptAsFailure: false,
  };
  const started = performance.now();
  const details = await fc.check(property as fc.IAsyncProperty<Ts>, parameters);
  console.log(
    `# fuzz ${name}: ${details.numRuns} runs (${details.numSkips} skipped) in ${Math.round(performance.now() - started)} ms, seed ${SEED}`,
  );
  if (details.failed) {
    assert.fail(`${name} failed (FUZZ_SEED=${SEED}):\n${fc.defaultReportMessage(details)}`);
  }
  // A property that ran nothing proves nothing.
  assert.ok(details.numRuns > 0, `${name} made no run`);
  return details.numRuns;
}

/** Rethrows anything that is not one of ours: a bug, not a refusal. */
function onlyTyped(error: unknown, allowed: (error: DriftlessError) => boolean): void {
  if (!(error instanceof DriftlessError) || !allowed(error)) throw error;
  assert.ok(error.message.length > 0, 'a typed error says what is wrong');
}

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------
// The YAML manifest reader
// ---------------------------------------------------------------------------

/** Error codes the manifest reader may answer a bad file with. */
const RENDER_CODES = new Set([
  'RENDER_PARSE',
  'RENDER_INVALID',
  'RENDER_TOO_LARGE',
  'RENDER_DUPLICATE',
  'RENDER_INPUT',
]);

const dnsName = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/);

/** Scalars and containers a manifest's data could hold, keys included, with YAML-awkward text. */
const yamlText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('yes', 'no', 'on', 'off', '~', 'null', '0644', '1e3', '.inf', '- x', ': y', '#c'),
);
const jsonData = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    yamlText,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(yamlText, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A Kubernetes-shaped object: what a user could write in Git. */
const manifestObject = fc.record({
  apiVersion: fc.constantFrom('v1', 'apps/v1', 'example.com/v1alpha1'),
  kind: fc.constantFrom('ConfigMap', 'Deployment', 'Widget', 'Secret'),
  metadata: fc.record(
    {
      name: dnsName,
      namespace: dnsName,
      labels: fc.dictionary(dnsName, dnsName, { maxKeys: 3 }),
    },
    { requiredKeys: ['name'] },
  ),
  data: fc.dictionary(yamlText, jsonData, { maxKeys: 5 }),
});

/** Edits that break text in the ways people and tools do: cut, insert, duplicate, swap. */
function mutateText(text: string, edits: readonly [number, number, string][]): string {
  let result = text;
  for (const [at, length, insert] of edits) {
    const start = result.length === 0 ? 0 : at % result.length;
    result = result.slice(0, start) + insert + result.slice(start + (length % 8));
  }
  return result;
}
const textEdit = fc.tuple(
  fc.nat(),
  fc.nat(),
  fc.oneof(
    fc.string({ maxLength: 4 }),
    fc.constantFrom(
      '\n',
      ':',
      '- ',
      '&a ',
      '*a',
      '<<: *a',
      '{',
      '[',
      '"',
      "'",
      '\t',
      '---\n',
      '!!',
    ),
  ),
);

/** Line count of a file: every accepted object's line must be inside it. */
function lineCount(text: string): number {
  return text.split('\n').length;
}

describe('fuzz: the YAML manifest reader', () => {
  it(
    'reads any bytes into objects or a typed render error naming the file',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare
      const bytes = fc.oneof(
        fc.uint8Array({ maxLength: 512 }),
        fc.string({ unit: 'binary', maxLength: 512 }).map((text) => encoder.encode(text)),
      );

      // Act
      const runs = await fuzz(
        'manifest reader, any bytes',
        fc.property(bytes, (content) => {
          const file: RevisionFile = { path: 'dir/fuzz.yaml', content };
          try {
            const bundle = parseRevision([file]);
            for (const object of bundle.objects) {
              assert.equal(object.source.file, 'dir/fuzz.yaml');
              assert.ok(object.source.line >= 1);
            }
          } catch (error) {
            onlyTyped(error, (e) => RENDER_CODES.has(e.code) && e.message.includes('fuzz.yaml'));
          }
        }),
      );

      // Assess
      assert.ok(runs > 0);
    },
  );

  it(
    'reads back the objects it was given as YAML, exactly, and their bundle round-trips',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare
      const files = fc.uniqueArray(manifestObject, {
        minLength: 1,
        maxLength: 6,
        selector: (object) => `${object.kind}/${object.metadata.namespace}/${object.metadata.name}`,
      });

      // Act
      const runs = await fuzz(
        'manifest reader, objects round-trip',
        fc.property(files, fc.boolean(), (objects, asList) => {
          const text = asList
            ? dump({ apiVersion: 'v1', kind: 'List', items: objects })
            : objects.map((object) => dump(object)).join('---\n');
          const bundle = parseRevision([{ path: 'all.yaml', content: encoder.encode(text) }]);

          // Assess: every object, as written (namespace '' or absent is dropped, as kubectl does).
          assert.equal(bundle.objects.length, objects.length);
          for (const written of objects) {
            const read = bundle.objects.find(
              (object) =>
                object.kind === written.kind &&
                object.name === written.metadata.name &&
                object.namespace === written.metadata.namespace,
            );
            assert.ok(read, `${written.kind}/${written.metadata.name} is read back`);
            assert.deepEqual(read.manifest, JSON.parse(JSON.stringify(written)));
            assert.ok(read.source.line >= 1 && read.source.line <= lineCount(text));
          }
          const bytes = serializeBundle(bundle);
          assert.deepEqual(parseBundle(bytes), bundle);
        }),
      );
      assert.ok(runs > 0);
    },
  );

  it(
    'answers damaged manifests with a typed error, or objects that have what every object needs',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare
      const damaged = fc.tuple(
        fc.array(manifestObject, { minLength: 1, maxLength: 3 }),
        fc.array(textEdit, { minLength: 1, maxLength: 6 }),
      );

      // Act
      const runs = await fuzz(
        'manifest reader, damaged YAML',
        fc.property(damaged, ([objects, edits]) => {
          const text = mutateText(objects.map((object) => dump(object)).join('---\n'), edits);
          try {
            const bundle = parseRevision([{ path: 'cut.yaml', content: encoder.encode(text) }]);
            // Assess: accepted objects are well-formed and unique.
            const seen = new Set<string>();
            for (const object of bundle.objects) {
              const metadata = object.manifest.metadata as JsonObject;
              assert.equal(object.manifest.kind, object.kind);
              assert.equal(metadata.name, object.name);
              assert.ok(object.kind !== '' && object.name !== '' && object.version !== '');
              assert.ok(object.source.line >= 1 && object.source.line <= lineCount(text));
              assert.ok(!seen.has(object.subject), `${object.subject} once`);
              seen.add(object.subject);
            }
            assert.deepEqual(parseBundle(serializeBundle(bundle)), bundle);
          } catch (error) {
            onlyTyped(error, (e) => RENDER_CODES.has(e.code) && e.message.startsWith('cut.yaml'));
          }
        }),
      );
      assert.ok(runs > 0);
    },
  );
});

// ---------------------------------------------------------------------------
// Webhook verifiers and push parsers
// ---------------------------------------------------------------------------

const SECRET = 'fuzzing secret';

function hmacHex(body: string): string {
  return createHmac('sha256', SECRET).update(body).digest('hex');
}

/** What each host needs to reach its parser: the push event header and a valid signature. */
interface HostDialect {
  readonly host: WebhookHost;
  readonly fixture: string;
  readonly eventHeaders: Record<string, string>;
  sign(body: string): Record<string, string>;
  /** Where a push body keeps its ref, after and repository URL (for generated pushes). */
  push(ref: string, after: string, url: string): unknown;
}

const DIALECTS: readonly HostDialect[] = [
  {
    host: 'github',
    fixture: 'github-push.json',
    eventHeaders: { 'x-github-event': 'push', 'content-type': 'application/json' },
    sign: (body) => ({ 'x-hub-signature-256': `sha256=${hmacHex(body)}` }),
    push: (ref, after, url) => ({ ref, after, repository: { clone_url: url } }),
  },
  {
    host: 'gitlab',
    fixture: 'gitlab-push.json',
    eventHeaders: { 'x-gitlab-event': 'Push Hook' },
    sign: () => ({ 'x-gitlab-token': SECRET }),
    push: (ref, after, url) => ({
      object_kind: 'push',
      ref,
      after,
      project: { git_http_url: url },
    }),
  },
  {
    host: 'gitea',
    fixture: 'gitea-push.json',
    eventHeaders: { 'x-gitea-event': 'push' },
    sign: (body) => ({ 'x-gitea-signature': hmacHex(body) }),
    push: (ref, after, url) => ({ ref, after, repository: { clone_url: url } }),
  },
  {
    host: 'bitbucket',
    fixture: 'bitbucket-server-refs-changed.json',
    eventHeaders: { 'x-event-key': 'repo:refs_changed' },
    sign: (body) => ({ 'x-hub-signature': `sha256=${hmacHex(body)}` }),
    push: (ref, after, url) => ({
      repository: { links: { clone: [{ href: url }] } },
      changes: [{ ref: { id: ref }, toHash: after, type: 'UPDATE' }],
    }),
  },
  {
    host: 'generic',
    fixture: 'github-push.json',
    eventHeaders: {},
    sign: (body) => ({ 'x-driftless-signature': `sha256=${hmacHex(body)}` }),
    push: (ref, after, url) => ({ repository: url, ref, after }),
  },
];

const WEBHOOK_CODES = new Set([
  'WEBHOOK_SIGNATURE',
  'WEBHOOK_PAYLOAD_INVALID',
  'WEBHOOK_TOO_LARGE',
]);

/** Checks what any delivery may come to; returns it. */
async function receive(host: WebhookHost, request: WebhookRequest) {
  const outcome = await receiveWebhook(host, request, [SECRET], { maxBytes: 64 * 1024 });
  assert.ok([200, 202, 400, 401, 413].includes(outcome.status), `status ${outcome.status}`);
  if (outcome.kind === 'rejected') {
    assert.ok(outcome.code !== undefined && WEBHOOK_CODES.has(outcome.code), outcome.code);
    assert.ok(outcome.reason.length > 0);
    assert.ok(!outcome.reason.includes(SECRET), 'a reason never holds the secret');
  }
  if (outcome.kind === 'push') {
    assert.ok(outcome.events !== undefined && outcome.events.length > 0);
    for (const event of outcome.events) {
      assert.match(event.ref, /^refs\/(heads|tags)\//);
      assert.doesNotMatch(event.after, /^0+$/, 'a deletion is never a push to deploy');
      assert.ok(event.repositoryUrls.length > 0);
      assert.equal(event.deliveryId, outcome.deliveryId);
    }
  }
  return outcome;
}

/** JSON values that look like push payloads, with fields of every wrong type. */
const anyJson = fc.jsonValue({ maxDepth: 4 });
const pushLike = (dialect: HostDialect) =>
  fc
    .tuple(
      fc.oneof(
        fc.constantFrom('refs/heads/main', 'refs/tags/v1', 'refs/pull/1/head', 'main', ''),
        fc.string(),
      ),
      fc.oneof(fc.constantFrom('0'.repeat(40), 'a'.repeat(40), 'abc'), fc.string()),
      fc.oneof(fc.constant('https://git.example.com/org/repo.git'), fc.string()),
      fc.array(
        fc.tuple(
          fc.constantFrom('ref', 'after', 'repository', 'changes', 'project', 'object_kind'),
          anyJson,
        ),
        {
          maxLength: 3,
        },
      ),
    )
    .map(([ref, after, url, overrides]) => {
      const body = dialect.push(ref, after, url) as Record<string, unknown>;
      for (const [key, value] of overrides) body[key] = value;
      return body;
    });

/** Every host, drawn per run; `counts` tallies the runs each host got, for the printed figures. */
function anyHost(counts: Map<WebhookHost, number>): fc.Arbitrary<HostDialect> {
  return fc.constantFrom(...DIALECTS).map((dialect) => {
    counts.set(dialect.host, (counts.get(dialect.host) ?? 0) + 1);
    return dialect;
  });
}

function printCounts(name: string, counts: Map<WebhookHost, number>): void {
  console.log(
    `# fuzz ${name}, runs per host: ${[...counts].map(([h, n]) => `${h} ${n}`).join(', ')}`,
  );
  assert.deepEqual([...counts.keys()].sort(), DIALECTS.map((d) => d.host).sort(), 'every host ran');
}

describe('fuzz: webhook verifiers and push parsers', () => {
  it(
    'refuses any unsigned or wrongly signed delivery with 401 and reads nothing, for every host',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare: any body, any headers, a signature header that is not the body's.
      const counts = new Map<WebhookHost, number>();
      const body = fc.string({ unit: 'binary', maxLength: 256 });
      const headers = fc.dictionary(
        fc.oneof(
          fc.constantFrom(
            'x-hub-signature-256',
            'x-hub-signature',
            'x-gitlab-token',
            'x-gitea-signature',
            'x-forgejo-signature',
            'x-driftless-signature',
            'X-Hub-Signature-256',
          ),
          fc.string({ maxLength: 12 }),
        ),
        fc.oneof(
          fc.string({ maxLength: 80 }),
          fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256=${h}`),
        ),
        { maxKeys: 4 },
      );

      // Act
      const runs = await fuzz(
        'webhook verifiers, forged signatures',
        fc.asyncProperty(anyHost(counts), body, headers, async (dialect, text, forged) => {
          const genuine = Object.values(dialect.sign(text));
          // A forged value equal to the genuine one would be a valid signature: not a forgery.
          fc.pre(!Object.values(forged).some((value) => genuine.includes(value.trim())));
          const outcome = await receive(dialect.host, {
            headers: { ...dialect.eventHeaders, ...forged },
            body: text,
          });

          // Assess
          assert.equal(outcome.status, 401, outcome.reason);
          assert.equal(outcome.code, 'WEBHOOK_SIGNATURE');
          assert.equal(outcome.deliveryId, undefined, 'nothing of an unverified body is kept');
        }),
      );
      assert.ok(runs > 0);
      printCounts('webhook verifiers, forged signatures', counts);
    },
  );

  it(
    'parses any signed body into a push, a ping, ignored or a 400, for every host',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare: damaged real deliveries, push-like JSON with wrong fields, and any text.
      const counts = new Map<WebhookHost, number>();
      const bodies = (dialect: HostDialect): fc.Arbitrary<string> => {
        const real = readFileSync(`test/fixtures/webhooks/${dialect.fixture}`, 'utf8');
        return fc.oneof(
          fc
            .array(textEdit, { minLength: 1, maxLength: 4 })
            .map((edits) => mutateText(real, edits)),
          pushLike(dialect).map((value) => JSON.stringify(value)),
          anyJson.map((value) => JSON.stringify(value)),
          fc.string({ unit: 'binary', maxLength: 256 }),
        );
      };
      const deliveries = anyHost(counts).chain((dialect) =>
        fc.tuple(fc.constant(dialect), bodies(dialect)),
      );
      const extraHeaders = fc.dictionary(
        fc.constantFrom(
          'content-type',
          'x-github-event',
          'x-gitlab-event',
          'x-event-key',
          'x-driftless-event',
          'x-gitea-event',
        ),
        fc.oneof(
          fc.constantFrom(
            'push',
            'ping',
            'Push Hook',
            'System Hook',
            'repo:push',
            'application/x-www-form-urlencoded',
            '',
          ),
          fc.string({ maxLength: 12 }),
        ),
        { maxKeys: 2 },
      );

      // Act
      const runs = await fuzz(
        'webhook parsers, signed bodies',
        fc.asyncProperty(deliveries, fc.option(extraHeaders), async ([dialect, text], extra) => {
          const outcome = await receive(dialect.host, {
            headers: { ...dialect.eventHeaders, ...(extra ?? {}), ...dialect.sign(text) },
            body: text,
          });
          // Assess: a verified delivery always has an id (its header's, or the body's hash).
          // (@octokit/webhooks refuses to verify an empty body: GitHub never sends one.)
          if (dialect.host === 'github' && text === '') return;
          assert.notEqual(outcome.status, 401, outcome.reason);
          assert.ok(outcome.deliveryId !== undefined && outcome.deliveryId.length > 0);
        }),
      );
      assert.ok(runs > 0);
      printCounts('webhook parsers, signed bodies', counts);
    },
  );

  it(
    'reads back the ref, commit and repository of a generated push, for every host',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Prepare
      const counts = new Map<WebhookHost, number>();
      const push = fc.record({
        ref: fc.oneof(
          dnsName.map((name) => `refs/heads/${name}`),
          fc.stringMatching(/^v[0-9]{1,3}\.[0-9]{1,3}$/).map((tag) => `refs/tags/${tag}`),
        ),
        after: fc.stringMatching(/^[0-9a-f]{40}$/).filter((sha) => !/^0+$/.test(sha)),
        url: dnsName.map((name) => `https://git.example.com/${name}/repo.git`),
      });

      // Act
      const runs = await fuzz(
        'webhook parsers, round trip',
        fc.asyncProperty(anyHost(counts), push, async (dialect, { ref, after, url }) => {
          const text = JSON.stringify(dialect.push(ref, after, url));
          const outcome = await receive(dialect.host, {
            headers: { ...dialect.eventHeaders, ...dialect.sign(text) },
            body: text,
          });

          // Assess
          assert.equal(outcome.kind, 'push', outcome.reason);
          assert.deepEqual(
            [outcome.event?.ref, outcome.event?.after, outcome.event?.repositoryUrls],
            [ref, after, [url]],
          );
        }),
      );
      assert.ok(runs > 0);
      printCounts('webhook parsers, round trip', counts);
    },
  );
});

// ---------------------------------------------------------------------------
// The config loader
// ---------------------------------------------------------------------------

/** Values a config field could be given: right ones and every wrong type. */
const fieldValue = (good: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 3, arbitrary: good },
    { weight: 2, arbitrary: anyJson },
    { weight: 1, arbitrary: fc.constant(null) },
  );

const trackLike = fc.record(
  {
    name: fieldValue(dnsName),
    repository: fieldValue(fc.constantFrom('https://git.example.com/org/repo.git', './local', '')),
    reference: fieldValue(fc.constantFrom('main', 'refs/tags/v1', 'v1.2.3')),
    semver: fieldValue(fc.constantFrom('>=1.0.0', 'not a range')),
    subPath: fieldValue(fc.constantFrom('deploy', '../up', '/abs', 'a/../b')),
    namespace: fieldValue(dnsName),
    interval: fieldValue(fc.constantFrom('5m', '1s', '10s', 'forever', 3)),
    prune: fieldValue(fc.boolean()),
    dependsOn: fieldValue(fc.array(dnsName, { maxLength: 2 })),
    ignore: fieldValue(
      fc.array(fc.record({ paths: fc.array(fc.constantFrom('/spec/replicas', 'x')) }), {
        maxLength: 2,
      }),
    ),
    rules: fieldValue(
      fc.array(fc.record({ syncTo: fc.constantFrom('git', 'cluster') }), { maxLength: 2 }),
    ),
    writeBack: fieldValue(fc.record({ include: fc.boolean() })),
    helm: fieldValue(fc.record({ chart: fc.constantFrom('charts/app', '../x') })),
    auth: fieldValue(fc.constantFrom({ type: 'basic', secret: 'env:X' }, { type: 'token' })),
    kustomize: fieldValue(fc.constantFrom('auto', true, false)),
    cluster: fieldValue(fc.constantFrom('prod', 'staging')),
    bucket: fieldValue(fc.record({ name: dnsName })),
    targetNamespace: fieldValue(dnsName),
    serviceAccountName: fieldValue(dnsName),
    restrictNamespace: fieldValue(fc.boolean()),
    healthChecks: fieldValue(
      fc.array(fc.record({ apiVersion: fc.constant('apps/v1'), kind: fc.constant('Deployment') })),
    ),
    substitute: fieldValue(fc.dictionary(fc.constantFrom('A', 'B_1', '1x'), fc.string())),
  },
  { requiredKeys: [] },
);

const clusterLike = fc.record(
  {
    name: fieldValue(fc.constantFrom('prod', 'staging')),
    kubeconfig: fieldValue(fc.constant('~/.kube/config')),
    kubeconfigSecret: fieldValue(fc.constant('env:KUBECONFIG_TEXT')),
    eks: fieldValue(fc.record({ name: dnsName, region: fc.constant('eu-west-1') })),
    context: fieldValue(fc.constant('admin')),
  },
  { requiredKeys: [] },
);

const tracksFromLike = fc.record(
  {
    cluster: fieldValue(fc.constantFrom('prod', 'staging')),
    gitTracks: fieldValue(fc.boolean()),
    repository: fieldValue(fc.constant('https://git.example.com/org/tracks.git')),
    reference: fieldValue(fc.constant('main')),
    subPath: fieldValue(fc.constantFrom('tracks', '../x')),
    auth: fieldValue(fc.constant({ type: 'token', secret: 'env:T' })),
    deployKeySecrets: fieldValue(fc.constantFrom('env:KEY_', 'ssm:/keys/', 'plain')),
  },
  { requiredKeys: [] },
);

const notificationLike = fc.record(
  {
    name: fieldValue(dnsName),
    type: fieldValue(
      fc.constantFrom('slack', 'msteams', 'webhook', 'commitStatus', 'sns', 'eventBridge'),
    ),
    url: fieldValue(fc.constant('env:URL')),
    token: fieldValue(fc.constant('env:TOKEN')),
    tracks: fieldValue(fc.array(fc.constantFrom('*', 'web', '#x'))),
    events: fieldValue(fc.array(fc.constantFrom('applied', 'failed', 'nonsense'))),
  },
  { requiredKeys: [] },
);

/** A Faros GitTrack document, which the loader reads as a track too. */
const gitTrackLike = fc.record({
  apiVersion: fc.constant('faros.pusher.com/v1alpha1'),
  kind: fc.constant('GitTrack'),
  metadata: fieldValue(fc.record({ name: dnsName, namespace: dnsName }, { requiredKeys: [] })),
  spec: fieldValue(
    fc.record(
      {
        repository: fieldValue(fc.constant('https://git.example.com/org/repo.git')),
        reference: fieldValue(fc.constant('main')),
        subPath: fieldValue(fc.constant('deploy')),
        deployKey: fieldValue(
          fc.record(
            {
              secretName: fieldValue(dnsName),
              key: fieldValue(fc.constant('password')),
              type: fieldValue(fc.constantFrom('HTTPBasicAuth', 'SSH', '')),
            },
            { requiredKeys: [] },
          ),
        ),
      },
      { requiredKeys: [] },
    ),
  ),
});

const configLike = fc.record(
  {
    store: fieldValue(fc.constantFrom({ type: 'fs', path: '/tmp/x' }, { type: 's3', bucket: 'b' })),
    clusters: fieldValue(fc.array(fieldValue(clusterLike), { maxLength: 2 })),
    webhooks: fieldValue(fc.constantFrom({ github: { secret: 'env:S' } }, { gitlab: {} })),
    tracks: fieldValue(fc.array(fieldValue(trackLike), { maxLength: 3 })),
    tracksFrom: fieldValue(fc.array(fieldValue(tracksFromLike), { maxLength: 2 })),
    notifications: fieldValue(fc.array(fieldValue(notificationLike), { maxLength: 2 })),
    dashboard: fieldValue(fc.constantFrom({ users: [{ name: 'a', password: 'env:P' }] }, {})),
  },
  { requiredKeys: [] },
);

/** Checks what parseConfig answers `text` with: a config with its invariants, or ConfigError. */
function checkConfig(text: string): void {
  try {
    const config = parseConfig(text, 'fuzz.yaml');
    const names = config.tracks.map((track) => track.name);
    assert.equal(new Set(names).size, names.length, 'track names are unique');
    for (const track of config.tracks) {
      assert.ok(track.repository !== undefined || track.bucket !== undefined);
      assert.ok(track.interval >= 10_000, `${track.name}: interval ${track.interval}`);
      for (const dependency of track.dependsOn) assert.ok(names.includes(dependency));
    }
  } catch (error) {
    onlyTyped(error, (e) => e instanceof ConfigError && e.issues.length > 0);
    // Every issue names the file as given.
    assert.ok((error as ConfigError).issues.every((issue) => issue.file === 'fuzz.yaml'));
  }
}

describe('fuzz: the config loader', () => {
  it('answers any text with a config or a ConfigError', { timeout: TEST_TIMEOUT_MS }, async () => {
    // Prepare
    const design = readFileSync('test/fixtures/config/design-example.yaml', 'utf8');
    const texts = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.array(textEdit, { minLength: 1, maxLength: 6 }).map((edits) => mutateText(design, edits)),
    );

    // Act
    const runs = await fuzz('config loader, any text', fc.property(texts, checkConfig));

    // Assess
    assert.ok(runs > 0);
  });

  it(
    'answers config-shaped documents with wrong field types with a config or a ConfigError',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Act: JSON is YAML, and dump() covers YAML's own quoting.
      const runs = await fuzz(
        'config loader, config-shaped values',
        fc.property(
          configLike,
          fc.boolean(),
          fc.array(gitTrackLike, { maxLength: 2 }),
          (config, asJson, gitTracks) => {
            const documents = [config, ...gitTracks];
            checkConfig(
              asJson
                ? documents.map((document) => JSON.stringify(document)).join('\n---\n')
                : documents.map((document) => dump(document)).join('---\n'),
            );
          },
        ),
      );

      // Assess
      assert.ok(runs > 0);
    },
  );
});

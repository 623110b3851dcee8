/**
 * `npx serverless package` (osls + serverless-esbuild), offline and without
 * AWS credentials, and the CloudFormation it generates: every point of the
 * deployment contract (issue 4, item 5) is checked here rather than trusted
 * to a deploy.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { load, dump } from 'js-yaml';
import { parseJob } from '../../src/aws/parse-job.ts';
import { packageService } from '../harness/serverless-package.ts';
import { lambdaBuildOptions } from '../harness/lambda-build.ts';

const run = promisify(execFile);

const FUNCTIONS = ['webhook', 'fetch', 'apply', 'drift', 'rollback', 'dashboard'] as const;
type FunctionName = (typeof FUNCTIONS)[number];
const CONFIG = 'infra/driftless.example.yaml';
const MAX_ZIP_BYTES = 2 * 1024 * 1024;
/** The built UI (npm run build) that the dashboard function ships. */
const WEB_DIR = 'dist/web';
/** The dashboard's routes (serverless.yml, infra/serverless/config-facts.js). */
const DASHBOARD_ROUTES = [
  'GET /',
  'GET /api/{proxy+}',
  'GET /assets/{file}',
  'POST /api/{proxy+}',
] as const;
const JWT_ISSUER = 'https://login.example.com/realms/ops';
const JWT_AUDIENCE = ['driftless-dashboard', 'driftless-cli'];

// CloudFormation JSON, read field by field; the assertions are its type check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Resource = {
  Type: string;
  Properties: Record<string, Json>;
  DependsOn?: unknown;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Template = {
  Resources: Record<string, Resource>;
  Outputs?: Record<string, unknown>;
  Conditions?: Record<string, unknown>;
};
interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

interface ZipEntry {
  readonly name: string;
  /** The Unix mode the packager recorded (upper half of the external attributes). */
  readonly mode: number;
  readonly data: Buffer;
}

/**
 * The files of a zip archive (stored or deflated entries, as the packager
 * writes them). Read here so the test needs no `unzip` binary.
 */
function zipEntries(archive: Buffer): ZipEntry[] {
  const eocd = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(eocd >= 0, 'zip end of central directory');
  const count = archive.readUInt16LE(eocd + 10);
  let at = archive.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    const method = archive.readUInt16LE(at + 10);
    const size = archive.readUInt32LE(at + 20);
    const nameLength = archive.readUInt16LE(at + 28);
    const extraLength = archive.readUInt16LE(at + 30);
    const commentLength = archive.readUInt16LE(at + 32);
    const mode = archive.readUInt32LE(at + 38) >>> 16;
    const local = archive.readUInt32LE(at + 42);
    const name = archive.toString('utf8', at + 46, at + 46 + nameLength);
    const dataAt = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
    const data = archive.subarray(dataAt, dataAt + size);
    entries.push({ name, mode, data: method === 0 ? data : inflateRawSync(data) });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The files of a zip archive, by name. */
const unzip = (archive: Buffer): Map<string, Buffer> =>
  new Map(zipEntries(archive).map((entry) => [entry.name, entry.data]));

/** ELF e_machine of a 64-bit little-endian executable for ARM64 (AArch64). */
const EM_AARCH64 = 183;

let outDir: string;
let template: Template;
/** The template packaged for a config with `dashboard: {readAccess: open, authorizer: jwt}`. */
let jwtTemplate: Template;
/** Where that config is: inside the checkout, since the package patterns name it relatively. */
let jwtConfigDir: string;

const cap = (name: string) => name[0]!.toUpperCase() + name.slice(1);
const resource = (id: string): Resource => {
  const found = template.Resources[id];
  assert.ok(found, `resource ${id} is in the template`);
  return found;
};
const lambda = (fn: FunctionName) => resource(`${cap(fn)}LambdaFunction`).Properties;
const ofType = (type: string) =>
  Object.entries(template.Resources).filter(([, r]) => r.Type === type);

/** The statements of a function's own role. */
function statementsOf(fn: FunctionName): Statement[] {
  const role = lambda(fn).Role as { 'Fn::GetAtt': [string, string] };
  const roleId = role['Fn::GetAtt'][0];
  const policies = resource(roleId).Properties.Policies as {
    PolicyDocument: { Statement: Statement[] };
  }[];
  return policies.flatMap((policy) =>
    policy.PolicyDocument.Statement.flatMap((statement) => {
      // `!If [Condition, statement, !Ref AWS::NoValue]`: the statement when the condition holds.
      const choice = (statement as { 'Fn::If'?: [string, Statement, unknown] })['Fn::If'];
      if (choice === undefined) return [statement];
      return conditionHolds(choice[0]) ? [choice[1]] : [];
    }),
  );
}

/** A template condition of the form `!Equals [a, b]`, which is all serverless.yml uses. */
function conditionHolds(name: string): boolean {
  const condition = (template.Conditions as Record<string, { 'Fn::Equals': [unknown, unknown] }>)[
    name
  ];
  assert.ok(condition, `condition ${name} is defined`);
  const [a, b] = condition['Fn::Equals'];
  return a === b;
}
const actions = (statement: Statement) => [statement.Action].flat();
const allActions = (fn: FunctionName) => statementsOf(fn).flatMap(actions);
const text = (value: unknown) => JSON.stringify(value);
/** Resources (as JSON text) of the statements allowing `action`. */
const resourcesFor = (fn: FunctionName, action: string) =>
  statementsOf(fn)
    .filter((s) => s.Effect === 'Allow' && actions(s).includes(action))
    .flatMap((s) => [s.Resource].flat().map(text));
const queueArn = (id: string) => text({ 'Fn::GetAtt': [id, 'Arn'] });
/** Whether a resource pattern matches `value`, `*` standing for any run of characters (IAM). */
const globMatches = (pattern: string, value: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  ).test(value);

/** The HTTP API routes of a template. */
const routesOf = (of: Template): Record<string, Json>[] =>
  Object.values(of.Resources)
    .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
    .map((r) => r.Properties);

/** The integration (its properties) a route targets: `integrations/<Ref>`. */
function integrationOf(of: Template, route: Record<string, Json>): Record<string, Json> {
  const [, target] = route.Target['Fn::Join'][1] as [string, { Ref: string }];
  const integration = of.Resources[target.Ref];
  assert.equal(integration?.Type, 'AWS::ApiGatewayV2::Integration', route.RouteKey);
  return integration!.Properties;
}

/** The files of the built UI, as zip entry names (`dist/web/index.html`, ...). */
async function webFiles(): Promise<string[]> {
  const names = await readdir(WEB_DIR, { recursive: true, withFileTypes: true }).catch(() => []);
  const files = names
    .filter((entry) => entry.isFile())
    .map((entry) => relative('.', join(entry.parentPath, entry.name)));
  assert.ok(
    files.includes(`${WEB_DIR}/index.html`),
    `${WEB_DIR}/index.html: the dashboard UI is built (npm run build)`,
  );
  return files;
}

before(
  async () => {
    outDir = await mkdtemp(join(tmpdir(), 'driftless-sls-'));
    const packageWith = async (config: string, into: string): Promise<Template> =>
      (await packageService({ config, into, scratch: outDir })) as Template;
    template = await packageWith(CONFIG, outDir);
    // The same service for a dashboard open to read, signing in with an OIDC provider's tokens.
    await mkdir('.driftless', { recursive: true });
    jwtConfigDir = await mkdtemp(join('.driftless', 'sls-package-'));
    const config = load(await readFile(CONFIG, 'utf8')) as Record<string, unknown>;
    config.dashboard = {
      readAccess: 'open',
      authorizer: { type: 'jwt', issuer: JWT_ISSUER, audience: JWT_AUDIENCE },
    };
    await writeFile(join(jwtConfigDir, 'driftless.yaml'), dump(config));
    jwtTemplate = await packageWith(join(jwtConfigDir, 'driftless.yaml'), join(outDir, 'jwt'));
  },
  { timeout: 22 * 60_000 },
);

after(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
  if (jwtConfigDir) await rm(jwtConfigDir, { recursive: true, force: true });
});

describe('serverless package', () => {
  it('declares the six functions on nodejs22.x arm64, each with its own role', () => {
    // Assess
    assert.deepEqual(
      ofType('AWS::Lambda::Function')
        .map(([id]) => id)
        .sort(),
      FUNCTIONS.map((fn) => `${cap(fn)}LambdaFunction`).sort(),
    );
    const roles = new Set<string>();
    for (const fn of FUNCTIONS) {
      const props = lambda(fn);
      assert.equal(props.Runtime, 'nodejs22.x', fn);
      assert.deepEqual(props.Architectures, ['arm64'], fn);
      assert.equal(props.Handler, `handlers/${fn}.handler`, fn);
      assert.equal(props.Environment.Variables.DRIFTLESS_CONFIG, CONFIG, fn);
      roles.add(text(props.Role));
    }
    assert.equal(roles.size, FUNCTIONS.length, 'one role per function');
    assert.equal(template.Resources.IamRoleLambdaExecution, undefined, 'no shared default role');
  });

  it('bundles each function into its own zip of at most 2 MB with the config, without what it must not hold', async (t) => {
    // Prepare
    const sizes: string[] = [];
    const ui = await webFiles();
    // What gives the ESM bundle the require, __dirname and __filename its CommonJS libraries use.
    const banner = (await lambdaBuildOptions()).banner?.js ?? '';
    assert.match(banner, /const __dirname = /);

    for (const fn of FUNCTIONS) {
      // Act
      const zip = join(outDir, `${fn}.zip`);
      const bytes = (await stat(zip)).size;
      const files = unzip(await readFile(zip));
      const bundle = files.get(`handlers/${fn}.mjs`)?.toString('utf8') ?? '';
      sizes.push(
        `${fn} ${(bytes / 1024).toFixed(0)} KiB zipped, ${(bundle.length / 1024).toFixed(0)} KiB bundle`,
      );

      // Assess
      assert.ok(bytes <= MAX_ZIP_BYTES, `${fn}.zip is ${bytes} bytes`);
      // The dashboard also ships the built UI; no other function does.
      assert.deepEqual(
        [...files.keys()].sort(),
        [CONFIG, `handlers/${fn}.mjs`, ...(fn === 'dashboard' ? ui : [])].sort(),
        `${fn}: bundle and config only`,
      );
      assert.match(files.get(CONFIG)?.toString('utf8') ?? '', /tracks:/);
      assert.ok(bundle.startsWith(banner), `${fn}: begins with serverless.yml's banner`);
      // Only apply reaches a cluster: the kubeconfig reader and EKS tokens only in its bundle.
      assert.equal(
        bundle.includes('KUBERNETES_EXEC_INFO'),
        fn === 'apply',
        `${fn}: kubeconfig reader`,
      );
      // client-node's KubeConfig would bring the whole generated API (bench: lambda-bundles).
      assert.equal(bundle.includes('loadFromDefault'), false, `${fn}: @kubernetes/client-node`);
      assert.equal(bundle.includes('x-k8s-aws-id'), fn === 'apply', `${fn}: EKS token`);
      assert.equal(bundle.includes('isomorphic-git'), fn === 'fetch', `${fn}: isomorphic-git`);
      // Triggers and the dashboard hold no credentials: not even the code to read a secret.
      assert.equal(
        bundle.includes('GetSecretValue'),
        !['drift', 'rollback', 'dashboard'].includes(fn),
        `${fn}: secrets`,
      );
      // The serverless-offline job adapter belongs to the local stage's entry points only.
      assert.equal(bundle.includes('x-amz-invocation-type'), false, `${fn}: offline job adapter`);
      assert.equal(bundle.includes('2015-03-31/functions'), false, `${fn}: Lambda Invoke API`);
    }
    t.diagnostic(sizes.join('; '));
  });

  for (const [layerName, resource, tools] of [
    ['renderers', 'RenderersLambdaLayer', ['bin/helm', 'bin/kustomize']],
    ['decryption', 'DecryptionLambdaLayer', ['bin/sops']],
  ] as const) {
    it(`ships ${tools.join(' and ')} for Linux on arm64, executable, in the ${layerName} layer`, async (t) => {
      // Prepare
      const zip = join(outDir, `${layerName}.zip`);

      // Act
      const entries = zipEntries(await readFile(zip));

      // Assess
      const layers = ofType('AWS::Lambda::LayerVersion');
      assert.deepEqual(layers.map(([name]) => name).sort(), [
        'DecryptionLambdaLayer',
        'RenderersLambdaLayer',
      ]);
      const layer = layers.find(([name]) => name === resource)!;
      assert.deepEqual(layer[1].Properties.CompatibleArchitectures, ['arm64']);
      assert.deepEqual(entries.map((entry) => entry.name).sort(), tools);
      for (const { name, mode, data } of entries) {
        assert.equal(mode & 0o111, 0o111, `${name} is executable (mode ${mode.toString(8)})`);
        assert.equal(data.toString('latin1', 0, 4), '\x7fELF', `${name} is an ELF file`);
        assert.equal(data[4], 2, `${name} is 64-bit`);
        assert.equal(data[5], 1, `${name} is little-endian`);
        assert.equal(data.readUInt16LE(18), EM_AARCH64, `${name} is built for aarch64`);
      }
      const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
      const unpacked = entries.reduce((sum, entry) => sum + entry.data.length, 0);
      t.diagnostic(
        `${layerName} layer ${mib((await stat(zip)).size)} MiB zipped, ${mib(unpacked)} MiB unpacked`,
      );
    });
  }

  it('gives the renderers to fetch only and sops to apply only, with their paths under /opt', () => {
    // Assess
    for (const fn of FUNCTIONS) {
      const props = lambda(fn);
      const variables = props.Environment.Variables;
      if (fn === 'fetch') {
        assert.deepEqual(props.Layers, [{ Ref: 'RenderersLambdaLayer' }]);
        assert.equal(variables.DRIFTLESS_KUSTOMIZE, '/opt/bin/kustomize');
        assert.equal(variables.DRIFTLESS_HELM, '/opt/bin/helm');
      } else if (fn === 'apply') {
        assert.deepEqual(props.Layers, [{ Ref: 'DecryptionLambdaLayer' }]);
        assert.equal(variables.DRIFTLESS_SOPS, '/opt/bin/sops');
      } else {
        assert.equal(props.Layers, undefined, `${fn}: no layers`);
      }
      if (fn !== 'fetch') {
        assert.equal(variables.DRIFTLESS_KUSTOMIZE, undefined, `${fn}: DRIFTLESS_KUSTOMIZE`);
        assert.equal(variables.DRIFTLESS_HELM, undefined, `${fn}: DRIFTLESS_HELM`);
      }
      if (fn !== 'apply')
        assert.equal(variables.DRIFTLESS_SOPS, undefined, `${fn}: DRIFTLESS_SOPS`);
    }
  });

  it('routes POST /webhook/{provider} of an HTTP API to the webhook function', () => {
    // Assess
    const routes = routesOf(template);
    assert.deepEqual(
      routes.map((r) => r.RouteKey).sort(),
      ['POST /webhook/{provider}', ...DASHBOARD_ROUTES].sort(),
    );
    const webhook = routes.find((r) => r.RouteKey === 'POST /webhook/{provider}')!;
    // A Git host signs its deliveries; API Gateway checks nothing (the function checks the HMAC).
    assert.equal(webhook.AuthorizationType, undefined);
    const integration = integrationOf(template, webhook);
    assert.equal(integration.PayloadFormatVersion, '2.0');
    assert.match(text(integration.IntegrationUri), /WebhookLambdaFunction/);
  });

  it('routes the dashboard page, assets and API to the dashboard function, each behind AWS_IAM by default', () => {
    // Assess
    const routes = routesOf(template).filter((r) => r.RouteKey !== 'POST /webhook/{provider}');
    assert.deepEqual(routes.map((r) => r.RouteKey).sort(), [...DASHBOARD_ROUTES].sort());
    for (const route of routes) {
      assert.equal(route.AuthorizationType, 'AWS_IAM', route.RouteKey);
      assert.equal(route.AuthorizerId, undefined, route.RouteKey);
      const integration = integrationOf(template, route);
      assert.equal(integration.PayloadFormatVersion, '2.0', route.RouteKey);
      assert.match(text(integration.IntegrationUri), /DashboardLambdaFunction/, route.RouteKey);
    }
    assert.deepEqual(
      Object.values(template.Resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Authorizer'),
      [],
      'no JWT authorizer without dashboard.authorizer: jwt',
    );
    const props = lambda('dashboard');
    assert.equal(props.Timeout, 15);
    assert.equal(props.MemorySize, 512);
    assert.deepEqual(props.Environment.Variables.DRIFTLESS_FETCH_QUEUE_URL, { Ref: 'FetchQueue' });
    assert.deepEqual(props.Environment.Variables.DRIFTLESS_APPLY_QUEUE_URL, { Ref: 'ApplyQueue' });
  });

  it('with readAccess open and a JWT authorizer: GET routes open, the session and POST routes behind the issuer’s tokens', () => {
    // Assess
    const routes = routesOf(jwtTemplate).filter((r) => r.RouteKey !== 'POST /webhook/{provider}');
    assert.deepEqual(
      routes.map((r) => r.RouteKey).sort(),
      [...DASHBOARD_ROUTES, 'GET /api/session'].sort(),
    );
    const authorizers = Object.entries(jwtTemplate.Resources).filter(
      ([, r]) => r.Type === 'AWS::ApiGatewayV2::Authorizer',
    );
    assert.equal(authorizers.length, 1);
    const [authorizerId, authorizer] = authorizers[0]!;
    assert.deepEqual(authorizer.Properties.ApiId, { Ref: 'HttpApi' });
    assert.equal(authorizer.Properties.AuthorizerType, 'JWT');
    assert.deepEqual(authorizer.Properties.IdentitySource, ['$request.header.Authorization']);
    assert.deepEqual(authorizer.Properties.JwtConfiguration, {
      Issuer: JWT_ISSUER,
      Audience: JWT_AUDIENCE,
    });
    for (const route of routes) {
      // The session keeps the authorizer: the page's token form checks a token there.
      if (route.RouteKey.startsWith('GET ') && route.RouteKey !== 'GET /api/session') {
        assert.equal(route.AuthorizationType, undefined, route.RouteKey);
        assert.equal(route.AuthorizerId, undefined, route.RouteKey);
      } else {
        assert.equal(route.AuthorizationType, 'JWT', route.RouteKey);
        assert.deepEqual(route.AuthorizerId, { Ref: authorizerId }, route.RouteKey);
      }
    }
  });

  it('ships the built UI in the dashboard zip, where the packaged handler reads it', async () => {
    // Prepare: the zip unpacked as Lambda unpacks it into LAMBDA_TASK_ROOT.
    const files = unzip(await readFile(join(outDir, 'dashboard.zip')));
    const ui = await webFiles();
    const asset = ui.find((name) => name.startsWith(`${WEB_DIR}/assets/`));
    const task = await mkdtemp(join(tmpdir(), 'driftless-dashboard-task-'));
    try {
      for (const [name, data] of files) {
        await mkdir(dirname(join(task, name)), { recursive: true });
        await writeFile(join(task, name), data);
      }

      // Act: the bundle's handler, run from there, answers the page and an asset.
      const paths = ['/', ...(asset === undefined ? [] : [`/${relative(WEB_DIR, asset)}`])];
      const script = `
        const { handler } = await import(${JSON.stringify(join(task, 'handlers/dashboard.mjs'))});
        const answers = [];
        for (const rawPath of ${JSON.stringify(paths)}) {
          const result = await handler({
            rawPath, rawQueryString: '', headers: { host: 'dash.test' },
            requestContext: { stage: '$default', http: { method: 'GET' } },
          });
          answers.push({ rawPath, status: result.statusCode, body: result.body });
        }
        process.stdout.write(JSON.stringify(answers));`;
      const { stdout } = await run(
        process.execPath,
        ['--no-warnings', '--input-type=module', '--eval', script],
        {
          cwd: task,
          env: {
            PATH: process.env.PATH,
            AWS_REGION: 'eu-west-1',
            DRIFTLESS_CONFIG: CONFIG,
            DRIFTLESS_BUCKET: 'driftless-test-artifacts',
            DRIFTLESS_FETCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/driftless-test-fetch',
            DRIFTLESS_APPLY_QUEUE_URL:
              'https://sqs.eu-west-1.amazonaws.com/1/driftless-test-apply.fifo',
            DRIFTLESS_LOG_LEVEL: 'error',
          },
        },
      );

      // Assess
      const answers = JSON.parse(stdout) as { rawPath: string; status: number; body: string }[];
      assert.equal(answers.length, paths.length);
      for (const answer of answers) {
        const file =
          answer.rawPath === '/' ? `${WEB_DIR}/index.html` : `${WEB_DIR}${answer.rawPath}`;
        assert.equal(answer.status, 200, `${answer.rawPath}: ${answer.body}`);
        assert.equal(answer.body, files.get(file)?.toString('utf8'), answer.rawPath);
      }
    } finally {
      await rm(task, { recursive: true, force: true });
    }
  });

  it('runs the drift function every minute; it decides which tracks are due', () => {
    // Assess
    const rules = ofType('AWS::Events::Rule')
      .map(([, r]) => r.Properties)
      .filter((r) => r.ScheduleExpression !== undefined);
    assert.equal(rules.length, 1);
    assert.equal(rules[0]!.ScheduleExpression, 'rate(1 minute)');
    assert.match(text(rules[0]!.Targets), /DriftLambdaFunction/);
  });

  it('keeps artifacts in a KMS-encrypted, versioned, private, TLS-only bucket with lifecycle rules', () => {
    // Assess
    const key = resource('ArtifactKey').Properties;
    assert.equal(key.EnableKeyRotation, true);
    const bucket = resource('ArtifactBucket').Properties;
    const sse = bucket.BucketEncryption.ServerSideEncryptionConfiguration[0];
    assert.equal(sse.ServerSideEncryptionByDefault.SSEAlgorithm, 'aws:kms');
    assert.deepEqual(sse.ServerSideEncryptionByDefault.KMSMasterKeyID, {
      'Fn::GetAtt': ['ArtifactKey', 'Arn'],
    });
    assert.equal(bucket.VersioningConfiguration.Status, 'Enabled');
    assert.deepEqual(bucket.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const rules = bucket.LifecycleConfiguration.Rules as Record<string, Json>[];
    assert.ok(rules.every((rule) => rule.Status === 'Enabled'));
    assert.ok(
      rules.some(
        (rule) =>
          rule.NoncurrentVersionExpiration?.NoncurrentDays === 7 && rule.Prefix === undefined,
      ),
    );
    assert.ok(rules.some((rule) => rule.Prefix === 'deliveries/' && rule.ExpirationInDays === 7));
    // Jobs too large for a message outlive the longest a message is kept (14 days, in a DLQ).
    assert.ok(rules.some((rule) => rule.Prefix === 'jobs/' && rule.ExpirationInDays === 15));
    const policy = resource('ArtifactBucketPolicy').Properties;
    assert.deepEqual(policy.Bucket, { Ref: 'ArtifactBucket' });
    // The statement refusing plain HTTP, wherever it stands among the Deny statements.
    const deny = (policy.PolicyDocument.Statement as Statement[]).find(
      (s) => s.Effect === 'Deny' && s.Sid === 'DenyInsecureTransport',
    );
    assert.deepEqual(deny?.Condition, { Bool: { 'aws:SecureTransport': 'false' } });
    assert.equal(deny?.Action, 's3:*');
    for (const fn of FUNCTIONS) {
      assert.deepEqual(
        lambda(fn).Environment.Variables.DRIFTLESS_BUCKET,
        { Ref: 'ArtifactBucket' },
        fn,
      );
    }
  });

  it('refuses PutObjects into the bucket without the conditional headers the store sends: records need If-None-Match, state If-Match or If-None-Match', () => {
    // Prepare
    const statements = resource('ArtifactBucketPolicy').Properties.PolicyDocument
      .Statement as (Statement & { Principal?: unknown })[];
    const objects = (prefix: string) => text({ 'Fn::Sub': `\${ArtifactBucket.Arn}/${prefix}/*` });
    /** The Deny statements naming exactly `<prefix>/*` of the bucket. */
    const denying = (prefix: string) =>
      statements.filter(
        (s) => s.Effect === 'Deny' && [s.Resource].flat().map(text).includes(objects(prefix)),
      );

    // Assess: for every caller (a leaked key, a bug), and PutObject only: the condition keys
    // exist on PutObject alone, so `Null` would hold on every read and deny it.
    const expected: Record<string, Json> = {
      artifacts: { Null: { 's3:if-none-match': 'true' } },
      history: { Null: { 's3:if-none-match': 'true' } },
      deliveries: { Null: { 's3:if-none-match': 'true' } },
      // One Null block: denied only when both headers are absent (create, or update).
      state: { Null: { 's3:if-none-match': 'true', 's3:if-match': 'true' } },
    };
    for (const [prefix, condition] of Object.entries(expected)) {
      const found = denying(prefix);
      assert.equal(found.length, 1, `one Deny statement names ${prefix}/*`);
      assert.equal(found[0]!.Principal, '*', prefix);
      assert.equal(found[0]!.Action, 's3:PutObject', prefix);
      assert.deepEqual(found[0]!.Condition, condition, prefix);
    }
    // Published track lists (last write wins) and job bodies (named by their digest) are written
    // without a condition: only the TLS rule may cover them.
    for (const prefix of ['published', 'jobs']) {
      const covering = statements.filter(
        (s) =>
          s.Effect === 'Deny' &&
          [s.Resource]
            .flat()
            .map((r) => (r as { 'Fn::Sub'?: string })['Fn::Sub'])
            .some(
              (sub) => sub !== undefined && globMatches(sub, `\${ArtifactBucket.Arn}/${prefix}/x`),
            ),
      );
      assert.deepEqual(
        covering.map((s) => s.Condition),
        [{ Bool: { 'aws:SecureTransport': 'false' } }],
        prefix,
      );
    }
  });

  it('keeps the key of the artifact bucket wherever it keeps the bucket: removed stack, replacement', () => {
    // Assess: a retained bucket whose key is scheduled for deletion holds objects nobody can read.
    const bucket = resource('ArtifactBucket');
    assert.equal(bucket.DeletionPolicy, 'Retain');
    assert.equal(bucket.UpdateReplacePolicy, 'Retain');
    assert.equal(resource('ArtifactKey').DeletionPolicy, 'Retain');
    assert.equal(resource('ArtifactKey').UpdateReplacePolicy, 'Retain');
    // Not its alias: a name kept past the stack would fail the stage's next deploy.
    assert.equal(resource('ArtifactKeyAlias').DeletionPolicy, undefined);
  });

  it('caps parallel fetches and lets each queue deliver a job five times before dead-lettering it', () => {
    // Assess: a throttled receive counts as one (AWS advises maxReceiveCount >= 5 for Lambda).
    for (const id of ['FetchQueue', 'ApplyQueue']) {
      assert.ok(resource(id).Properties.RedrivePolicy.maxReceiveCount >= 5, id);
    }
    const fetchMapping = ofType('AWS::Lambda::EventSourceMapping')
      .map(([, r]) => r.Properties)
      .find((props) => text(props.EventSourceArn) === queueArn('FetchQueue'));
    assert.equal(fetchMapping?.ScalingConfig?.MaximumConcurrency, 10);
  });

  it('feeds fetch from a standard queue and apply from a FIFO queue, both with dead-letter queues', () => {
    // Assess
    const fetchQueue = resource('FetchQueue').Properties;
    const applyQueue = resource('ApplyQueue').Properties;
    assert.equal(fetchQueue.FifoQueue, undefined);
    assert.deepEqual(fetchQueue.RedrivePolicy.deadLetterTargetArn, {
      'Fn::GetAtt': ['FetchDeadLetterQueue', 'Arn'],
    });
    assert.equal(applyQueue.FifoQueue, true);
    assert.match(applyQueue.QueueName, /\.fifo$/);
    assert.deepEqual(applyQueue.RedrivePolicy.deadLetterTargetArn, {
      'Fn::GetAtt': ['ApplyDeadLetterQueue', 'Arn'],
    });
    assert.equal(resource('ApplyDeadLetterQueue').Properties.FifoQueue, true);
    // A job still running must never become visible to a second invocation.
    assert.ok(applyQueue.VisibilityTimeout > lambda('apply').Timeout);
    assert.ok(fetchQueue.VisibilityTimeout > lambda('fetch').Timeout);

    const mappings = Object.fromEntries(
      ofType('AWS::Lambda::EventSourceMapping').map(([, r]) => [
        text(r.Properties.EventSourceArn),
        r.Properties,
      ]),
    );
    const applyMapping = mappings[queueArn('ApplyQueue')] as Json;
    const fetchMapping = mappings[queueArn('FetchQueue')] as Json;
    assert.match(text(applyMapping.FunctionName), /ApplyLambdaFunction/);
    assert.match(text(fetchMapping.FunctionName), /FetchLambdaFunction/);
    assert.deepEqual(applyMapping.FunctionResponseTypes, ['ReportBatchItemFailures']);
    assert.deepEqual(fetchMapping.FunctionResponseTypes, ['ReportBatchItemFailures']);
    assert.equal(applyMapping.BatchSize, 1);
    assert.equal(applyMapping.ScalingConfig.MaximumConcurrency, 5);
  });

  it('queues a fetch job of a bucket track when its bucket changes, through an EventBridge rule', () => {
    // Assess
    const rules = ofType('AWS::Events::Rule').filter(([id]) => id.startsWith('BucketEvents'));
    assert.deepEqual(
      rules.map(([id]) => id),
      ['BucketEventsReportsRule'],
    );
    const rule = rules[0]![1].Properties;
    assert.deepEqual(rule.EventPattern, {
      source: ['aws.s3'],
      'detail-type': ['Object Created', 'Object Deleted'],
      detail: {
        bucket: { name: ['example-org-manifests'] },
        object: { key: [{ prefix: 'reports/' }] },
      },
    });
    const [target] = rule.Targets;
    assert.deepEqual(target.Arn, { 'Fn::GetAtt': ['FetchQueue', 'Arn'] });
    // The job the fetch function will read, as its queue parser reads it.
    const job = JSON.parse(target.InputTransformer.InputTemplate.replace('<id>', 'abc'));
    assert.deepEqual(job, {
      type: 'fetch',
      track: 'reports',
      trigger: 'webhook',
      deliveryId: 's3-event-abc',
    });
    assert.deepEqual(parseJob(JSON.stringify(job)), job);
    const [, policy] = ofType('AWS::SQS::QueuePolicy').find(
      ([id]) => id === 'FetchQueueBucketEventsPolicy',
    )!;
    const [statement] = policy.Properties.PolicyDocument.Statement;
    assert.deepEqual(statement.Principal, { Service: 'events.amazonaws.com' });
    assert.deepEqual(statement.Condition, {
      ArnEquals: { 'aws:SourceArn': [{ 'Fn::GetAtt': ['BucketEventsReportsRule', 'Arn'] }] },
    });
  });

  it('lets fetch alone read the source buckets the config lists without auth', () => {
    for (const fn of FUNCTIONS) {
      const reads = statementsOf(fn).filter((s) => s.Sid === 'ReadSourceBuckets');
      assert.deepEqual(
        reads.map((s) => [actions(s), s.Resource]),
        fn === 'fetch'
          ? [
              [
                ['s3:ListBucket', 's3:GetObject'],
                [
                  'arn:aws:s3:::example-org-manifests',
                  'arn:aws:s3:::example-org-manifests/reports/*',
                ],
              ],
            ]
          : [],
        `${fn}: source buckets`,
      );
    }
  });

  it('lets fetch and apply publish to exactly the SNS topics and EventBridge buses the config names', () => {
    for (const fn of FUNCTIONS) {
      const publish = statementsOf(fn).filter((s) => actions(s).includes('sns:Publish'));
      const put = statementsOf(fn).filter((s) => actions(s).includes('events:PutEvents'));
      const sees = fn === 'fetch' || fn === 'apply';
      assert.deepEqual(
        publish.map((s) => s.Resource),
        sees ? [['arn:aws:sns:eu-west-1:123456789012:driftless-deploys']] : [],
        `${fn}: SNS topics`,
      );
      assert.deepEqual(
        put.map((s) => text(s.Resource)),
        sees
          ? [
              text([
                {
                  'Fn::Sub':
                    'arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default',
                },
              ]),
            ]
          : [],
        `${fn}: EventBridge buses`,
      );
    }
  });

  it('lets apply alone decrypt SOPS data keys, with exactly the KMS keys the config lists', () => {
    // The example config lists one key under tracks[0].decryption.kmsKeys.
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-0000-4000-8000-000000000001';
    for (const fn of FUNCTIONS) {
      const decrypt = statementsOf(fn).filter(
        (s) => actions(s).includes('kms:Decrypt') && text(s.Resource).includes(':kms:'),
      );
      assert.deepEqual(
        decrypt.map((s) => s.Resource),
        fn === 'apply' ? [[key]] : [],
        `${fn}: SOPS KMS keys`,
      );
      // Encrypting again (a Secret written back) is allowed on the same keys only, and only to apply.
      const encrypt = statementsOf(fn).filter((s) => actions(s).includes('kms:Encrypt'));
      assert.deepEqual(
        encrypt.map((s) => s.Resource),
        fn === 'apply' ? [[key]] : [],
        `${fn}: SOPS KMS encryption`,
      );
    }
  });

  it('gives each role least privilege: cluster credentials only to apply, Git credentials only to fetch', () => {
    // Assess: who may read which secrets.
    const mentions = (fn: FunctionName, needle: string) => text(statementsOf(fn)).includes(needle);
    for (const fn of FUNCTIONS) {
      assert.equal(mentions(fn, 'driftless/cluster/'), fn === 'apply', `${fn}: cluster secrets`);
      assert.equal(mentions(fn, 'eks:'), fn === 'apply', `${fn}: eks`);
      assert.equal(mentions(fn, 'sts:AssumeRole'), fn === 'apply', `${fn}: assume role`);
      assert.equal(mentions(fn, 'driftless/git/'), fn === 'fetch', `${fn}: Git secrets`);
      assert.equal(mentions(fn, 'driftless/webhook/'), fn === 'webhook', `${fn}: webhook secrets`);
      // Receivers' URLs: where job events are seen (fetch, apply), nowhere else.
      assert.equal(
        mentions(fn, 'driftless/notify/'),
        fn === 'fetch' || fn === 'apply',
        `${fn}: notification secrets`,
      );
      for (const prefix of ['driftless/decryption/', 'driftless/variables/']) {
        assert.equal(mentions(fn, prefix), fn === 'apply', `${fn}: ${prefix} secrets`);
      }
      assert.ok(!allActions(fn).some((a) => a.endsWith('*')), `${fn}: no wildcard actions`);
      // Only apply deletes, and only state documents (the delete action removes a deleted track's).
      const deletes = statementsOf(fn).filter((s) => actions(s).includes('s3:DeleteObject'));
      assert.deepEqual(
        deletes.map((s) => [actions(s), text(s.Resource)]),
        fn === 'apply'
          ? [[['s3:DeleteObject'], text({ 'Fn::Sub': '${ArtifactBucket.Arn}/state/*' })]]
          : [],
        `${fn}: deletes state documents only`,
      );
      assert.ok(
        statementsOf(fn).every((s) => s.Effect === 'Allow' && text(s.Resource) !== '"*"'),
        fn,
      );
    }
    for (const fn of ['drift', 'rollback', 'dashboard'] as const) {
      assert.ok(
        !allActions(fn).some((a) => /^(secretsmanager|ssm|eks|sts):/.test(a)),
        `${fn}: no secrets at all`,
      );
      assert.ok(!allActions(fn).includes('s3:PutObject'), `${fn}: writes nothing`);
    }

    // The webhook writes delivery markers and nothing else, and reads only them and the
    // published track lists (tracksFrom): no artifact, no state.
    assert.deepEqual(resourcesFor('webhook', 's3:PutObject'), [
      text({ 'Fn::Sub': '${ArtifactBucket.Arn}/deliveries/*' }),
    ]);
    assert.deepEqual(resourcesFor('webhook', 's3:GetObject').sort(), [
      text({ 'Fn::Sub': '${ArtifactBucket.Arn}/deliveries/*' }),
      text({ 'Fn::Sub': '${ArtifactBucket.Arn}/published/*' }),
    ]);
    // Only the steps that can read a tracksFrom source publish its tracks.
    for (const fn of ['fetch', 'apply'] as const) {
      assert.ok(
        resourcesFor(fn, 's3:PutObject').some((r) => r.includes('/published/*')),
        fn,
      );
    }
    for (const fn of ['drift', 'rollback'] as const) {
      assert.ok(
        resourcesFor(fn, 's3:GetObject').some((r) => r.includes('/published/*')),
        fn,
      );
      assert.ok(!resourcesFor(fn, 's3:PutObject').some((r) => r.includes('/published/')), fn);
    }

    // Readers may list (S3 answers 404, not 403, for a missing key).
    // (fetch may also list the source buckets of bucket tracks: tested above.)
    for (const fn of FUNCTIONS) {
      assert.deepEqual(
        resourcesFor(fn, 's3:ListBucket').filter((arn) => !arn.includes('example-org-manifests')),
        [text({ 'Fn::GetAtt': ['ArtifactBucket', 'Arn'] })],
        fn,
      );
    }

    // A job too large for a message: apply stores it, fetch reads it; no other function sees one.
    const jobs = text({ 'Fn::Sub': '${ArtifactBucket.Arn}/jobs/*' });
    for (const fn of FUNCTIONS) {
      assert.equal(resourcesFor(fn, 's3:PutObject').includes(jobs), fn === 'apply', fn);
      assert.equal(resourcesFor(fn, 's3:GetObject').includes(jobs), fn === 'fetch', fn);
    }

    // Apply reads artifacts but never writes them; fetch writes them.
    assert.ok(resourcesFor('apply', 's3:GetObject').some((r) => r.includes('/artifacts/*')));
    assert.ok(!resourcesFor('apply', 's3:PutObject').some((r) => r.includes('/artifacts/')));
    assert.ok(resourcesFor('fetch', 's3:PutObject').some((r) => r.includes('/artifacts/*')));
    assert.ok(resourcesFor('rollback', 's3:GetObject').some((r) => r.includes('/artifacts/*')));
    assert.ok(
      resourcesFor('drift', 's3:GetObject').every(
        (r) => r.includes('/state/*') || r.includes('/published/*'),
      ),
    );

    // Who may queue what.
    const sends = (fn: FunctionName) => resourcesFor(fn, 'sqs:SendMessage').sort();
    assert.deepEqual(sends('webhook'), [queueArn('FetchQueue')]);
    // Fetch queues syncs, and the first poll of a track found in a tracksFrom repository.
    assert.deepEqual(sends('fetch'), [queueArn('ApplyQueue'), queueArn('FetchQueue')].sort());
    // Apply queues syncs of dependents it made Ready onto its own queue, and a chart to render
    // again for the cluster's capabilities onto the fetch queue.
    assert.deepEqual(sends('apply'), [queueArn('ApplyQueue'), queueArn('FetchQueue')].sort());
    assert.deepEqual(
      sends('drift'),
      [queueArn('ApplyQueue'), queueArn('FailedInvocationsQueue'), queueArn('FetchQueue')].sort(),
    );
    // Rollback queues rollbacks and lifecycle actions for apply, and the sync action's fetch.
    assert.deepEqual(
      sends('rollback'),
      [queueArn('ApplyQueue'), queueArn('FailedInvocationsQueue'), queueArn('FetchQueue')].sort(),
    );
    // The dashboard's actions: sync queues a fetch, the others an apply job.
    assert.deepEqual(sends('dashboard'), [queueArn('ApplyQueue'), queueArn('FetchQueue')].sort());
    assert.deepEqual(resourcesFor('fetch', 'sqs:ReceiveMessage'), [queueArn('FetchQueue')]);
    assert.deepEqual(resourcesFor('apply', 'sqs:ReceiveMessage'), [queueArn('ApplyQueue')]);

    // Only Lambda assumes the roles; each role writes only its own function's logs.
    for (const fn of FUNCTIONS) {
      const roleId = (lambda(fn).Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      assert.match(
        text(resource(roleId).Properties.AssumeRolePolicyDocument),
        /"Service":"lambda.amazonaws.com"/,
      );
      assert.deepEqual(resourcesFor(fn, 'logs:PutLogEvents'), [
        text({
          'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/driftless-test-${fn}:*`,
        }),
      ]);
    }
  });

  it('sends failed asynchronous invocations of drift and rollback to a dead-letter destination', () => {
    // Assess
    const configs = Object.fromEntries(
      ofType('AWS::Lambda::EventInvokeConfig').map(([, r]) => [
        text(r.Properties.FunctionName),
        r.Properties,
      ]),
    );
    for (const fn of ['drift', 'rollback'] as const) {
      const config = configs[text({ Ref: `${cap(fn)}LambdaFunction` })];
      assert.ok(config, `${fn} has an EventInvokeConfig`);
      assert.deepEqual(config.DestinationConfig.OnFailure.Destination, {
        'Fn::GetAtt': ['FailedInvocationsQueue', 'Arn'],
      });
    }
  });

  it('lets the dashboard read the store and queue actions, and nothing else', () => {
    // Assess: exactly these statements; no EKS, no secrets, no writes.
    const store = (prefix: string) => ({ 'Fn::Sub': `\${ArtifactBucket.Arn}/${prefix}/*` });
    assert.deepEqual(
      statementsOf('dashboard').map((s) => [actions(s).sort(), s.Resource]),
      [
        [
          ['logs:CreateLogStream', 'logs:PutLogEvents'],
          {
            'Fn::Sub':
              'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/driftless-test-dashboard:*',
          },
        ],
        [
          ['s3:GetObject'],
          [store('artifacts'), store('state'), store('history'), store('published')],
        ],
        [['s3:ListBucket'], { 'Fn::GetAtt': ['ArtifactBucket', 'Arn'] }],
        [['kms:Decrypt'], { 'Fn::GetAtt': ['ArtifactKey', 'Arn'] }],
        [
          ['sqs:SendMessage'],
          [{ 'Fn::GetAtt': ['FetchQueue', 'Arn'] }, { 'Fn::GetAtt': ['ApplyQueue', 'Arn'] }],
        ],
      ],
    );
    const granted = allActions('dashboard');
    for (const forbidden of [/^eks:/, /^secretsmanager:/, /^ssm:/, /^sts:/, /^s3:(Put|Delete)/]) {
      assert.ok(!granted.some((a) => forbidden.test(a)), `dashboard: ${forbidden}`);
    }
    assert.deepEqual(
      ['kms:GenerateDataKey', 'kms:Encrypt', 'sqs:ReceiveMessage'].filter((a) =>
        granted.includes(a),
      ),
      [],
    );
    assert.equal(lambda('dashboard').Layers, undefined, 'no renderers, no sops');
  });

  it('sets log retention and the logs key on every function log group and the HTTP API access logs', () => {
    // Assess
    const groups = ofType('AWS::Logs::LogGroup').map(([, r]) => r.Properties);
    assert.deepEqual(
      groups.map((group) => group.LogGroupName).sort(),
      [
        '/aws/http-api/driftless-test',
        ...FUNCTIONS.map((fn) => `/aws/lambda/driftless-test-${fn}`),
      ].sort(),
    );
    for (const group of groups) {
      assert.equal(group.RetentionInDays, 30, group.LogGroupName);
      assert.deepEqual(group.KmsKeyId, { 'Fn::GetAtt': ['LogsKey', 'Arn'] }, group.LogGroupName);
    }
    assert.deepEqual(resource('HttpApiStage').Properties.AccessLogSettings.DestinationArn, {
      'Fn::GetAtt': ['HttpApiLogGroup', 'Arn'],
    });
    // CloudWatch Logs may use the key for this stack's log groups only; no role is granted it.
    const [, logs] = resource('LogsKey').Properties.KeyPolicy.Statement as Statement[];
    assert.deepEqual(logs!.Condition, {
      ArnLike: {
        'kms:EncryptionContext:aws:logs:arn': [
          {
            'Fn::Sub':
              'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/driftless-test-*',
          },
          {
            'Fn::Sub':
              'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/http-api/driftless-test',
          },
        ],
      },
    });
    for (const fn of FUNCTIONS) assert.ok(!text(statementsOf(fn)).includes('LogsKey'), fn);
  });

  it('throttles the HTTP API stage, so a flood of webhook or dashboard requests invokes no function', () => {
    // Assess
    const settings = resource('HttpApiStage').Properties.DefaultRouteSettings;
    assert.equal(settings.ThrottlingRateLimit, 50);
    assert.equal(settings.ThrottlingBurstLimit, 100);
  });
});

/**
 * Static checks of what is deployed: the CloudFormation that `npx serverless
 * package` makes (offline, without AWS credentials, as the packaging unit test
 * does), read by cfn-lint and checkov, the real tools from PyPI (pinned in
 * test/testbin/python/template-checks.txt, installed in a venv of their own).
 *
 * Three configs, so that the conditional parts are checked too: the example
 * (dashboard behind AWS_IAM, SOPS with a KMS key, SNS and EventBridge
 * notifications, a bucket track and its EventBridge rule), and the same with
 * open reads, under the dashboard's JWT authorizer and under AWS_IAM. Every finding is either fixed
 * in serverless.yml or suppressed there, next to its resource, with the reason;
 * the suppressions themselves are checked here, so none is added silently.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dump, load } from 'js-yaml';
import { packageService, UPDATE_TEMPLATE } from '../harness/serverless-package.ts';
import { REPO_ROOT, runBuildScript } from '../harness/testbin.ts';

const EXAMPLE_CONFIG = 'infra/driftless.example.yaml';
const REQUIREMENTS = join(REPO_ROOT, 'test/testbin/python/template-checks.txt');
/** serverless.yml's default region: cfn-lint checks resource types and values for it. */
const REGION = 'eu-west-1';
const TEMPLATE = UPDATE_TEMPLATE;
const FUNCTIONS = ['Webhook', 'Fetch', 'Apply', 'Drift', 'Rollback', 'Dashboard'];
const QUEUES = [
  'FetchQueue',
  'FetchDeadLetterQueue',
  'ApplyQueue',
  'ApplyDeadLetterQueue',
  'FailedInvocationsQueue',
];
const ROUTES = [
  'HttpApiRoutePostWebhookProviderVar',
  'HttpApiRouteGet',
  'HttpApiRouteGetAssetsFileVar',
  'HttpApiRouteGetApiProxyVar',
  'HttpApiRoutePostApiProxyVar',
];

/**
 * The suppressions serverless.yml may hold, by resource (`<template>` for the
 * template's own Metadata): each was reviewed and carries its reason there.
 */
const CHECKOV_SKIPS: Record<string, string[]> = {
  ArtifactBucket: ['CKV_AWS_18'],
  ServerlessDeploymentBucket: ['CKV_AWS_18'],
  ...Object.fromEntries(QUEUES.map((queue) => [queue, ['CKV_AWS_27']])),
  ...Object.fromEntries(
    FUNCTIONS.map((fn) => [
      `${fn}LambdaFunction`,
      ['CKV_AWS_115', 'CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_173'],
    ]),
  ),
};
const CFN_LINT_IGNORES: Record<string, string[]> = {
  '<template>': ['W8003'],
  HttpApiStage: ['W3005'],
  ...Object.fromEntries(FUNCTIONS.map((fn) => [`${fn}LambdaFunction`, ['W3005']])),
  ...Object.fromEntries(ROUTES.map((route) => [route, ['W3005']])),
};
/** Configs with readAccess: open have one route more: GET /api/session keeps the authorizer. */
const CFN_LINT_IGNORES_OF: Record<string, Record<string, string[]>> = {
  example: CFN_LINT_IGNORES,
  jwt: { ...CFN_LINT_IGNORES, HttpApiRouteGetApiSession: ['W3005'] },
  'iam-open': { ...CFN_LINT_IGNORES, HttpApiRouteGetApiSession: ['W3005'] },
};
const CONFIGS = Object.keys(CFN_LINT_IGNORES_OF);

// CloudFormation JSON and the tools' reports, read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a tool to its end; a non-zero exit is an answer here, not an exception. */
function runTool(
  file: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { ...options, maxBuffer: 64 * 1024 * 1024, timeout: 5 * 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0;
        if (typeof code !== 'number') {
          reject(new Error(`${file} ${args.join(' ')}: ${error?.message}\n${stderr}`));
          return;
        }
        resolve({ code, stdout, stderr });
      },
    );
    // Nothing to read: cfn-lint, given no template, would wait for one on its input.
    child.stdin?.end();
  });
}

interface CfnLintMatch {
  Filename: string;
  Level: string;
  Message: string;
  Rule: { Id: string };
  Location: { Path: (string | number)[]; Start: { LineNumber: number } };
}

interface CheckovResult {
  check_id: string;
  file_path: string;
  resource: string;
  check_result: { result: string; suppress_comment?: string };
}

interface CheckovReport {
  results: {
    passed_checks: CheckovResult[];
    failed_checks: CheckovResult[];
    skipped_checks: CheckovResult[];
    parsing_errors: string[];
  };
  summary: Record<string, number | string>;
}

const describeMatch = (m: CfnLintMatch) =>
  `${m.Rule.Id} ${m.Level} ${m.Location.Path.join('/')} (line ${m.Location.Start.LineNumber}): ${m.Message}`;
const describeResult = (r: CheckovResult) => `${r.check_id} ${r.resource}`;
/** checkov names files from the directory it runs in, with a leading slash. */
const checkovFile = (r: CheckovResult) => r.file_path.replace(/^\//, '');

let outDir: string;
let configDir: string;
/** The packaged templates, by name, as files under outDir. */
const templates = new Map<string, string>();
let venvBin: string;
let lint: { matches: CfnLintMatch[]; ran: Ran };
let checkov: { report: CheckovReport; ran: Ran };
/** A copy of the example template with two faults the tools must see (the test's own check). */
const MUTANT = 'mutant.json';

before(
  async () => {
    const venv = (
      await runBuildScript(join(REPO_ROOT, 'test/testbin/python/install.sh'), [REQUIREMENTS])
    ).get('python');
    assert.ok(venv, 'install.sh printed the venv');
    venvBin = join(venv, 'bin');

    outDir = await mkdtemp(join(tmpdir(), 'driftless-template-checks-'));
    // Inside the checkout: the package patterns name the config relatively.
    await mkdir(join(REPO_ROOT, '.driftless'), { recursive: true });
    configDir = await mkdtemp(join(REPO_ROOT, '.driftless', 'template-checks-'));
    const example = await readFile(join(REPO_ROOT, EXAMPLE_CONFIG), 'utf8');
    /** The example with this `dashboard:`, in a file of its own. */
    const exampleWith = async (name: string, dashboard: Json) => {
      const path = join(configDir, `driftless-${name}.yaml`);
      await writeFile(path, dump({ ...(load(example) as Json), dashboard }));
      return relative(REPO_ROOT, path);
    };
    const jwtConfig = await exampleWith('jwt', {
      readAccess: 'open',
      authorizer: {
        type: 'jwt',
        issuer: 'https://login.example.com/realms/ops',
        audience: ['driftless-dashboard'],
      },
    });
    const iamOpenConfig = await exampleWith('iam-open', {
      readAccess: 'open',
      authorizer: { type: 'iam' },
    });

    for (const [name, path] of [
      ['example', EXAMPLE_CONFIG],
      ['jwt', jwtConfig],
      ['iam-open', iamOpenConfig],
    ] as const) {
      await packageService({
        config: path,
        into: join(outDir, name),
        scratch: outDir,
        // Its own esbuild folder: the packaging unit test may rebuild and remove `.esbuild`.
        esbuildWorkFolder: relative(REPO_ROOT, join(configDir, `esbuild-${name}`)),
      });
      templates.set(name, join(name, TEMPLATE));
    }

    const mutant = JSON.parse(await readFile(join(outDir, 'example', TEMPLATE), 'utf8'));
    delete mutant.Resources.WebhookLogGroup.Properties.KmsKeyId;
    delete mutant.Metadata;
    await writeFile(join(outDir, MUTANT), JSON.stringify(mutant, null, 2));

    // Each tool once over every template (each run costs seconds of start-up).
    const files = [...templates.values(), MUTANT];
    const lintRan = await runTool(
      join(venvBin, 'cfn-lint'),
      // Templates first: --regions takes every value that follows it.
      [...files, '--format', 'json', '--regions', REGION],
      { cwd: outDir },
    );
    lint = { matches: parseJson(lintRan, 'cfn-lint'), ran: lintRan };
    const checkovRan = await runTool(
      join(venvBin, 'checkov'),
      [
        ...files.flatMap((file) => ['-f', file]),
        '--framework',
        'cloudformation',
        '--output',
        'json',
        // The checks that ship with checkov, and no account, platform or upload.
        '--skip-download',
      ],
      {
        cwd: outDir,
        env: { ...process.env, CKV_SKIP_PACKAGE_UPDATE_CHECK: 'true', BC_SKIP_MAPPING: 'true' },
      },
    );
    const report = parseJson(checkovRan, 'checkov');
    checkov = {
      // One report per framework; only cloudformation runs here.
      report: Array.isArray(report)
        ? report.find((r: Json) => r.check_type === 'cloudformation')
        : report,
      ran: checkovRan,
    };
  },
  { timeout: 20 * 60_000 },
);

function parseJson(ran: Ran, tool: string): Json {
  try {
    return JSON.parse(ran.stdout);
  } catch {
    throw new Error(`${tool} printed no JSON (exit ${ran.code}):\n${ran.stdout}\n${ran.stderr}`);
  }
}

after(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

describe('the packaged CloudFormation', () => {
  for (const name of CONFIGS) {
    it(`passes cfn-lint without an error or a warning (${name} config)`, () => {
      // Assess
      const file = templates.get(name)!;
      const found = lint.matches.filter((m) => m.Filename === file);
      assert.deepEqual(found.map(describeMatch), [], `cfn-lint ${file}:\n${lint.ran.stderr}`);
    });

    it(`passes every checkov check, parsed whole (${name} config)`, () => {
      // Assess
      const file = templates.get(name)!;
      const { results } = checkov.report;
      const ofFile = (list: CheckovResult[]) => list.filter((r) => checkovFile(r) === file);
      assert.deepEqual(results.parsing_errors, [], 'checkov parsed every template');
      assert.deepEqual(
        ofFile(results.failed_checks).map(describeResult),
        [],
        `checkov ${file}: ${JSON.stringify(checkov.report.summary)}`,
      );
      // Not vacuous: the functions, queues, buckets, roles, log groups and keys were all read.
      const checked = new Set(
        [...ofFile(results.passed_checks), ...ofFile(results.skipped_checks)].map(
          (r) => r.resource.split('.')[0],
        ),
      );
      for (const type of [
        'AWS::Lambda::Function',
        'AWS::SQS::Queue',
        'AWS::S3::Bucket',
        'AWS::IAM::Role',
        'AWS::Logs::LogGroup',
        'AWS::KMS::Key',
      ]) {
        assert.ok(checked.has(type), `checkov checked ${type}`);
      }
    });

    it(`suppresses only the reviewed checks, each where it applies and with its reason (${name} config)`, async () => {
      // Prepare
      const file = templates.get(name)!;
      const template = JSON.parse(await readFile(join(outDir, file), 'utf8'));

      // Act: the suppressions the template declares, and those checkov applied.
      const declaredSkips: Record<string, string[]> = {};
      const declaredIgnores: Record<string, string[]> = {};
      const templateIgnores = template.Metadata?.['cfn-lint']?.config?.ignore_checks;
      if (templateIgnores) declaredIgnores['<template>'] = [...templateIgnores].sort();
      for (const [id, resource] of Object.entries<Json>(template.Resources)) {
        const skips = resource.Metadata?.checkov?.skip as { id: string; comment?: string }[];
        if (skips) {
          declaredSkips[id] = skips.map((skip) => skip.id).sort();
          for (const skip of skips) {
            assert.ok((skip.comment ?? '').length >= 80, `${id} ${skip.id}: a reason is given`);
          }
        }
        const ignores = resource.Metadata?.['cfn-lint']?.config?.ignore_checks;
        if (ignores) declaredIgnores[id] = [...ignores].sort();
      }
      const applied: Record<string, string[]> = {};
      for (const skipped of checkov.report.results.skipped_checks) {
        if (checkovFile(skipped) !== file) continue;
        const id = skipped.resource.split('.')[1]!;
        (applied[id] ??= []).push(skipped.check_id);
        assert.ok(skipped.check_result.suppress_comment, `${describeResult(skipped)}: comment`);
      }
      for (const ids of Object.values(applied)) ids.sort();

      // Assess
      const sorted = (of: Record<string, string[]>) =>
        Object.fromEntries(Object.entries(of).map(([id, ids]) => [id, [...ids].sort()]));
      assert.deepEqual(declaredSkips, sorted(CHECKOV_SKIPS));
      assert.deepEqual(declaredIgnores, sorted(CFN_LINT_IGNORES_OF[name]!));
      // Each checkov skip stands for a check that would otherwise run there: none is stale.
      assert.deepEqual(applied, sorted(CHECKOV_SKIPS));
    });
  }

  it('is what the tools read: a log group without its key and conditions without their reason are found', () => {
    // Assess: the faults of the mutant template, found by each tool.
    const lintFound = lint.matches.filter((m) => m.Filename === MUTANT).map((m) => m.Rule.Id);
    assert.ok(lintFound.includes('W8003'), `cfn-lint on ${MUTANT}: ${lintFound.join(', ')}`);
    assert.notEqual(lint.ran.code, 0, 'cfn-lint exits non-zero on a warning');
    const failed = checkov.report.results.failed_checks
      .filter((r) => checkovFile(r) === MUTANT)
      .map(describeResult);
    assert.deepEqual(failed, ['CKV_AWS_158 AWS::Logs::LogGroup.WebhookLogGroup']);
    assert.notEqual(checkov.ran.code, 0, 'checkov exits non-zero on a failed check');
  });

  it('covers the create-stack template: its resources are the update template’s, checked above', async () => {
    // Prepare
    const read = async (name: string) =>
      JSON.parse(await readFile(join(outDir, 'example', name), 'utf8')) as {
        Resources: Record<string, { Type: string }>;
      };

    // Act
    const create = await read('cloudformation-template-create-stack.json');
    const update = await read(TEMPLATE);

    // Assess: the first deploy's bootstrap stack (the deployment bucket) is updated into the
    // checked one, where the same resources carry their settings and suppressions.
    const ids = Object.keys(create.Resources);
    assert.ok(ids.includes('ServerlessDeploymentBucket'));
    for (const id of ids) assert.equal(update.Resources[id]?.Type, create.Resources[id]!.Type, id);
  });
});

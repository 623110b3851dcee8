/**
 * Serverless variable source: facts of the bundled driftless.yaml that decide
 * IAM statements, so that each role is allowed exactly what the config needs:
 *
 *   ${file(infra/serverless/config-facts.js):kmsKeys}         tracks[].decryption.kmsKeys (apply)
 *   ${file(infra/serverless/config-facts.js):decryptsWithKms} 'true' or 'false'
 *   ${file(infra/serverless/config-facts.js):sourceBuckets}   S3 ARNs of tracks[].bucket without
 *                                                             auth (fetch reads them with its role)
 *   ${file(infra/serverless/config-facts.js):readsBuckets}    'true' or 'false'
 *   ${file(infra/serverless/config-facts.js):bucketEventResources}  EventBridge rules queueing
 *                                                             a fetch when a bucket changes
 *   ${file(infra/serverless/config-facts.js):snsTopics}       notifications[] SNS topics (fetch, apply)
 *   ${file(infra/serverless/config-facts.js):publishesToSns}  'true' or 'false'
 *   ${file(infra/serverless/config-facts.js):eventBuses}      notifications[] EventBridge buses
 *   ${file(infra/serverless/config-facts.js):putsEvents}      'true' or 'false'
 *   ${file(infra/serverless/config-facts.js):dashboardRoutes} the dashboard function's httpApi
 *                                                             events, each with the authorizer
 *                                                             dashboard.authorizer/readAccess ask
 *                                                             (the page and assets none under jwt;
 *                                                             GET /api/session its own with open
 *                                                             reads)
 *   ${file(infra/serverless/config-facts.js):dashboardRouteExtensions}  the cfn-lint metadata of
 *                                                             those routes some configs add
 *   ${file(infra/serverless/config-facts.js):httpApiAuthorizers}  provider.httpApi.authorizers:
 *                                                             the dashboard's JWT authorizer, if any
 *
 * It reads the same file the functions bundle (`--param config=...`), only for
 * these lists; the functions validate the whole config when they load it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { load } from 'js-yaml';

async function tracks({ resolveVariable }) {
  const path = await resolveVariable('param:config');
  const config = load(await readFile(resolve(path), 'utf8')) ?? {};
  return Array.isArray(config.tracks)
    ? config.tracks.filter((t) => t && typeof t === 'object')
    : [];
}

const unique = (values) => [...new Set(values)].sort();

export async function kmsKeys(context) {
  return unique(
    (await tracks(context)).flatMap((track) => {
      const listed = track.decryption?.kmsKeys;
      return Array.isArray(listed) ? listed.filter((key) => typeof key === 'string') : [];
    }),
  );
}

export async function decryptsWithKms(context) {
  return (await kmsKeys(context)).length > 0 ? 'true' : 'false';
}

/** A bucket with auth is read with those keys, not the role: only the others are granted. */
export async function sourceBuckets(context) {
  return unique(
    (await tracks(context))
      .filter((track) => track.bucket && typeof track.bucket.name === 'string' && !track.auth)
      .flatMap((track) => {
        const prefix = String(track.bucket.prefix ?? '').replace(/^\/+/, '');
        return [
          `arn:aws:s3:::${track.bucket.name}`,
          `arn:aws:s3:::${track.bucket.name}/${prefix}*`,
        ];
      }),
  );
}

export async function readsBuckets(context) {
  return (await sourceBuckets(context)).length > 0 ? 'true' : 'false';
}

/** A CloudFormation logical id part from a track name (DNS label). */
const logicalId = (name) =>
  name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

/**
 * One EventBridge rule per bucket track: an object created or deleted under
 * the track's prefix in its bucket sends the track's fetch job to the fetch
 * queue (the job is the rule's input, so no function runs for it), and a
 * queue policy lets exactly those rules send. The bucket's owner turns on
 * EventBridge notifications for the bucket (docs/configuration.md).
 */
export async function bucketEventResources(context) {
  const enabled = String(await context.resolveVariable('param:bucketEvents')) === 'true';
  const bucketTracks = (await tracks(context)).filter(
    (track) =>
      track.bucket && typeof track.bucket.name === 'string' && typeof track.name === 'string',
  );
  if (!enabled || bucketTracks.length === 0) return {};
  const Resources = {};
  const rules = [];
  for (const track of bucketTracks) {
    const id = `BucketEvents${logicalId(track.name)}Rule`;
    const prefix = String(track.bucket.prefix ?? '').replace(/^\/+/, '');
    Resources[id] = {
      Type: 'AWS::Events::Rule',
      Properties: {
        Description: `Driftless: fetch track ${track.name} when s3://${track.bucket.name}/${prefix} changes`,
        EventPattern: {
          source: ['aws.s3'],
          'detail-type': ['Object Created', 'Object Deleted'],
          detail: {
            bucket: { name: [track.bucket.name] },
            ...(prefix === '' ? {} : { object: { key: [{ prefix }] } }),
          },
        },
        Targets: [
          {
            Id: 'FetchQueue',
            Arn: { 'Fn::GetAtt': ['FetchQueue', 'Arn'] },
            InputTransformer: {
              InputPathsMap: { id: '$.id' },
              InputTemplate: `{"type":"fetch","track":"${track.name}","trigger":"webhook","deliveryId":"s3-event-<id>"}`,
            },
          },
        ],
      },
    };
    rules.push({ 'Fn::GetAtt': [id, 'Arn'] });
  }
  Resources.FetchQueueBucketEventsPolicy = {
    Type: 'AWS::SQS::QueuePolicy',
    Properties: {
      Queues: [{ Ref: 'FetchQueue' }],
      PolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'BucketEventRules',
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: { 'Fn::GetAtt': ['FetchQueue', 'Arn'] },
            Condition: { ArnEquals: { 'aws:SourceArn': rules } },
          },
        ],
      },
    },
  };
  return { Resources };
}

async function receivers({ resolveVariable }) {
  const path = await resolveVariable('param:config');
  const config = load(await readFile(resolve(path), 'utf8')) ?? {};
  return Array.isArray(config.notifications)
    ? config.notifications.filter((n) => n && typeof n === 'object')
    : [];
}

/** SNS topics of notifications[] (type sns): fetch and apply publish the events they see. */
export async function snsTopics(context) {
  return unique(
    (await receivers(context))
      .filter((n) => n.type === 'sns' && typeof n.topicArn === 'string')
      .map((n) => n.topicArn),
  );
}

export async function publishesToSns(context) {
  return (await snsTopics(context)).length > 0 ? 'true' : 'false';
}

/** EventBridge buses of notifications[] (type eventbridge): an ARN, or a name in this account. */
export async function eventBuses(context) {
  const buses = unique(
    (await receivers(context))
      .filter((n) => n.type === 'eventbridge')
      .map((n) => (typeof n.eventBus === 'string' ? n.eventBus : 'default')),
  );
  return buses.map((bus) =>
    bus.startsWith('arn:')
      ? bus
      : {
          'Fn::Sub': `arn:\${AWS::Partition}:events:\${AWS::Region}:\${AWS::AccountId}:event-bus/${bus}`,
        },
  );
}

export async function putsEvents(context) {
  return (await eventBuses(context)).length > 0 ? 'true' : 'false';
}

async function dashboard({ resolveVariable }) {
  const path = await resolveVariable('param:config');
  const config = load(await readFile(resolve(path), 'utf8')) ?? {};
  return config.dashboard && typeof config.dashboard === 'object' ? config.dashboard : {};
}

/** The name of the dashboard's JWT authorizer in provider.httpApi.authorizers. */
const DASHBOARD_JWT = 'dashboardJwt';

/**
 * dashboard.authorizer, checked as far as the template depends on it:
 * `{type: iam}` (the default) or `{type: jwt, issuer: https://..., audience: [...]}`.
 */
async function dashboardAuthorizer(context) {
  const authorizer = (await dashboard(context)).authorizer ?? { type: 'iam' };
  const type = authorizer?.type ?? 'iam';
  if (type === 'iam') return { type: 'iam' };
  if (type !== 'jwt') {
    throw new Error(`dashboard.authorizer.type must be iam or jwt, not ${JSON.stringify(type)}`);
  }
  const { issuer, audience } = authorizer;
  if (typeof issuer !== 'string' || !issuer.startsWith('https://')) {
    throw new Error('dashboard.authorizer.issuer must be an https:// URL (type: jwt)');
  }
  if (
    !Array.isArray(audience) ||
    audience.length === 0 ||
    !audience.every((entry) => typeof entry === 'string' && entry !== '')
  ) {
    throw new Error('dashboard.authorizer.audience must list at least one audience (type: jwt)');
  }
  return { type: 'jwt', issuer, audience };
}

/**
 * The dashboard function's routes. The API routes have the configured
 * authorizer (AWS_IAM, or the JWT authorizer below), except the GET route
 * when dashboard.readAccess is `open`: reading needs no sign-in then,
 * actions (POST) always do.
 *
 * With open reads, `GET /api/session` keeps the authorizer in a route of
 * its own (API Gateway picks the most specific route): the function knows
 * who asks only from an authorizer, and the page learns who may act by
 * asking the session. Without it nobody was ever signed in on the page, and
 * actions could not be reached from it: under JWT the page's token form
 * checks a token there; under IAM the signing proxy signs the session as it
 * signs every request. A visitor without a token or signature gets the
 * gateway's 401 (JWT) or 403 (IAM) there, and the page still shows the open
 * reads, with the actions disabled and how to sign in.
 *
 * The page and its assets (`GET /`, `GET /assets/{file}`) are the same
 * static files for everyone and hold no data (`driftless serve` serves them
 * without sign-in too). Under a JWT authorizer they have none: a browser's
 * navigation carries no `Authorization` header, so API Gateway would refuse
 * the page whose token form is how one signs in. Under IAM they keep
 * AWS_IAM: the browser goes through a signing proxy (aws-sigv4-proxy) that
 * signs the page's requests as it signs the API's, and an open page would
 * only let anyone invoke the function for a page whose every API request
 * is refused without a signature.
 */
export async function dashboardRoutes(context) {
  const type = (await dashboardAuthorizer(context)).type;
  const authorizer = type === 'jwt' ? { name: DASHBOARD_JWT } : { type: 'aws_iam' };
  const readAccess = (await dashboard(context)).readAccess ?? 'authenticated';
  if (readAccess !== 'open' && readAccess !== 'authenticated') {
    throw new Error(`dashboard.readAccess must be open or authenticated, not ${readAccess}`);
  }
  const route = (method, path, open) => ({
    httpApi: { method, path, ...(open ? {} : { authorizer }) },
  });
  const readsOpen = readAccess === 'open';
  const pageOpen = readsOpen || type === 'jwt';
  return [
    route('GET', '/', pageOpen),
    route('GET', '/assets/{file}', pageOpen),
    ...(readsOpen ? [route('GET', '/api/session', false)] : []),
    route('GET', '/api/{proxy+}', readsOpen),
    route('POST', '/api/{proxy+}', false),
  ];
}

/**
 * A resources fragment for the routes dashboardRoutes adds only in some configs: the framework
 * writes DependsOn on the integration their Target already references, as on every route, and
 * serverless.yml's extensions say so (cfn-lint W3005) only for routes every config has.
 */
export async function dashboardRouteExtensions(context) {
  const readAccess = (await dashboard(context)).readAccess ?? 'authenticated';
  if (readAccess !== 'open') return {};
  const redundantDependsOn = { 'cfn-lint': { config: { ignore_checks: ['W3005'] } } };
  return { extensions: { HttpApiRouteGetApiSession: { Metadata: redundantDependsOn } } };
}

/** provider.httpApi.authorizers: API Gateway checks the OIDC token of dashboard.authorizer (jwt). */
export async function httpApiAuthorizers(context) {
  const authorizer = await dashboardAuthorizer(context);
  if (authorizer.type !== 'jwt') return {};
  return {
    [DASHBOARD_JWT]: {
      type: 'jwt',
      identitySource: '$request.header.Authorization',
      issuerUrl: authorizer.issuer,
      audience: authorizer.audience,
    },
  };
}

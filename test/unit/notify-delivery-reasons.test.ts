/**
 * Why a notification was not delivered, as the log says it: the failure's
 * code (a refused connection, an invalid URL, an HTTP status), never the
 * receiver's URL or token — a marker planted in each must not reach the log.
 * A URL no request can be sent to is not tried, nor tried again.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { jsonLogger } from '../../src/logger.ts';
import { deliver, logUndelivered, type NotifiedTrack } from '../../src/notify/deliver.ts';
import type { NotificationEvent } from '../../src/notify/events.ts';

const MARKER = 'receiver-url-marker-93be';
const SHA = 'd'.repeat(40);

const event: NotificationEvent = {
  track: 'web',
  event: 'failed',
  revision: SHA,
  result: 'failed',
  message: 'Deployment/apps/api: refused',
  subjects: [],
  time: '2026-12-01T10:00:00.000Z',
};

/** A port nothing listens on: one that was open a moment ago. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Delivers `event` to a webhook receiver whose URL is `url`, logging as serve and the functions
 * do; returns the log lines and how many requests were sent.
 */
async function deliverTo(
  yaml: string,
  secrets: Record<string, string>,
  track: NotifiedTrack = {
    name: 'web',
    repository: 'https://github.com/acme/web.git',
    wait: false,
  },
): Promise<{ lines: string[]; reasons: string[]; requests: number }> {
  const lines: string[] = [];
  let requests = 0;
  const readSecret = async (ref: SecretRef): Promise<string> => {
    const value = ref.scheme === 'env' ? secrets[ref.name] : undefined;
    if (value === undefined) throw new Error('not set');
    return value;
  };
  await deliver(parseConfig(yaml, 'driftless.yaml').notifications, track, [event], {
    readSecret,
    attemptTimeoutMs: 1_000,
    // The real fetch, counted.
    fetch: (...args: Parameters<typeof fetch>) => {
      requests++;
      return fetch(...args);
    },
    onFailure: logUndelivered(jsonLogger((line) => lines.push(line))),
  });
  const reasons = lines.map((line) => (JSON.parse(line) as { error: string }).error);
  return { lines, reasons, requests };
}

const hook = 'notifications: [{name: audit, type: webhook, url: env:HOOK_URL}]';

describe('a notification not delivered', () => {
  it('logs a receiver that refuses connections as ECONNREFUSED, tried twice, without its URL', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/hooks/${MARKER}`;

    const { lines, reasons, requests } = await deliverTo(hook, { HOOK_URL: url });

    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /"msg":"notification not delivered"/);
    assert.match(lines[0]!, /"receiver":"audit"/);
    assert.equal(reasons[0], 'no answer: ECONNREFUSED');
    assert.equal(requests, 2, 'no connection is worth one more try');
    assert.ok(!lines.join('\n').includes(MARKER), lines.join('\n'));
  });

  it('logs an invalid URL as such, without trying it or quoting it', async () => {
    const { lines, reasons, requests } = await deliverTo(hook, {
      HOOK_URL: `hooks.example.com/${MARKER}`,
    });

    assert.equal(reasons.length, 1);
    assert.equal(reasons[0], 'the URL is not valid (ERR_INVALID_URL)');
    assert.equal(requests, 0);
    assert.ok(!lines.join('\n').includes(MARKER), lines.join('\n'));
  });

  it('logs a URL holding a password, or not http(s), without trying it or quoting it', async () => {
    const port = await closedPort();
    const { lines, reasons, requests } = await deliverTo(
      `notifications:
  - {name: creds, type: webhook, url: env:CREDS_URL}
  - {name: ftp, type: slack, url: env:FTP_URL}
`,
      {
        CREDS_URL: `http://driftless:${MARKER}@127.0.0.1:${port}/hook`,
        FTP_URL: `ftp://127.0.0.1:${port}/${MARKER}`,
      },
    );

    assert.deepEqual(reasons.sort(), [
      'the URL holds a user name or password, which HTTP requests may not carry',
      'the URL is not an http(s) URL',
    ]);
    assert.equal(requests, 0);
    assert.ok(!lines.join('\n').includes(MARKER), lines.join('\n'));
  });

  it('logs an HTTP refusal by its status, and a commit status host that is down without its token', async () => {
    const refusing = createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const port = (refusing.address() as AddressInfo).port;
    try {
      const refused = await deliverTo(hook, { HOOK_URL: `http://127.0.0.1:${port}/${MARKER}` });
      assert.deepEqual(refused.reasons, ['HTTP 404']);
      assert.equal(refused.requests, 1);
    } finally {
      refusing.close();
    }

    const down = await closedPort();
    const { lines, reasons } = await deliverTo(
      `notifications:
  - {name: status-back, type: commitStatus, provider: gitea, token: env:TOKEN, apiUrl: "http://127.0.0.1:${down}/api/v1"}
`,
      { TOKEN: MARKER },
      { name: 'web', repository: `http://127.0.0.1:${down}/acme/web.git`, wait: false },
    );
    assert.deepEqual(reasons, ['no answer: ECONNREFUSED']);
    assert.ok(!lines.join('\n').includes(MARKER), lines.join('\n'));
  });
});

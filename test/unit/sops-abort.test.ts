/**
 * sops is killed when the job that runs it is stopped (its deadline, an interruption), rather
 * than left running to its own timeout after the job gave up on it. The real sops, made to hang
 * the way it does in production: its KMS endpoint takes the connection and never answers.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { InterruptedError } from '../../src/errors.ts';
import { sopsDecrypt } from '../../src/render/sops.ts';
import { rendererBinaries } from '../harness/renderers.ts';

const ARN = 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';

/** A Secret as SOPS writes it for one KMS key: sops must ask KMS for the data key to decrypt it. */
const kmsEncrypted = `apiVersion: v1
kind: Secret
metadata:
    name: db
stringData:
    password: ENC[AES256_GCM,data:ZGF0YQ==,iv:aXZpdml2aXZpdml2aXZpdml2aXZpdml2aXZpdml2aXY=,tag:dGFndGFndGFndGFndGFndA==,type:str]
sops:
    kms:
        - arn: ${ARN}
          created_at: "2024-01-01T00:00:00Z"
          enc: AQICAHhZZm9vYmFyYmF6cXV4
          aws_profile: ""
    lastmodified: "2024-01-01T00:00:00Z"
    mac: ENC[AES256_GCM,data:bWFj,iv:aXZpdml2aXZpdml2aXZpdml2aXZpdml2aXZpdml2aXY=,tag:dGFndGFndGFndGFndGFndA==,type:str]
    encrypted_regex: ^(data|stringData)$
    version: 3.9.0
`;

describe('sopsDecrypt stopped by its signal (the real sops)', () => {
  it(
    'kills sops waiting on KMS and rejects with the interruption',
    { timeout: 20_000 },
    async () => {
      // Prepare: a KMS endpoint that takes connections and never answers.
      const connections: Socket[] = [];
      const kms = createServer((socket) => {
        connections.push(socket);
        // Read, so that sops going away ends the connection here.
        socket.resume();
      });
      kms.listen(0, '127.0.0.1');
      await once(kms, 'listening');
      const { port } = kms.address() as { port: number };
      const { sops } = await rendererBinaries();
      const stop = new AbortController();
      try {
        const decrypting = sopsDecrypt(
          { path: 'db.yaml', format: 'yaml', content: kmsEncrypted },
          {
            binary: sops,
            ageKeys: [],
            kmsKeys: [ARN],
            // Far beyond the test's own timeout: only the signal can end it in time.
            timeoutMs: 60_000,
            env: {
              AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
              AWS_SECRET_ACCESS_KEY: 'example',
              AWS_REGION: 'us-east-1',
              AWS_ENDPOINT_URL_KMS: `http://127.0.0.1:${port}`,
            },
            signal: stop.signal,
          },
        );
        const outcome = decrypting.then(
          () => assert.fail('sops cannot decrypt without an answer from KMS'),
          (error: unknown) => error,
        );
        // sops is waiting on KMS (or failed before it got there, which fails the test).
        const first = await Promise.race([once(kms, 'connection'), outcome]);
        assert.ok(Array.isArray(first), `sops ended before asking KMS: ${String(first)}`);
        const closed = once(connections[0]!, 'close');

        // Act
        stop.abort(new InterruptedError("interrupted: the track's deadline passed"));

        // Assess: the decryption rejects with the interruption, and sops is gone (its
        // connection to KMS closes with it).
        const error = await outcome;
        assert.ok(error instanceof InterruptedError, String(error));
        assert.match(String(error), /the track's deadline passed/);
        await closed;
      } finally {
        for (const socket of connections) socket.destroy();
        kms.close();
      }
    },
  );
});

/**
 * Discovery's answers for people when the API server refuses it: the
 * credentials (401) or their rights (403), with what the server said — not
 * "unreachable", as when nothing answered. A transport of our own port.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discoverResources } from '../../src/cluster/discovery.ts';
import { ClusterAuthError } from '../../src/cluster/errors.ts';
import type { KubeTransport } from '../../src/cluster/kube-http.ts';

const refusing =
  (status: number, message: string): KubeTransport =>
  async () => ({ status, body: { kind: 'Status', status: 'Failure', message, code: status } });

describe('discoverResources refused', () => {
  it('says the credentials were refused, with the server’s words, for a 401', async () => {
    await assert.rejects(discoverResources(refusing(401, 'Unauthorized')), (error: unknown) => {
      assert.ok(error instanceof ClusterAuthError, String(error));
      assert.equal(error.code, 'CLUSTER_AUTH_FAILED');
      assert.match(error.message, /HTTP 401 \(the credentials were refused\): Unauthorized$/);
      return true;
    });
  });

  it('says the credentials may not read the API for a 403', async () => {
    await assert.rejects(
      discoverResources(refusing(403, 'forbidden: User "system:anonymous" cannot get path "/api"')),
      /HTTP 403 \(the credentials may not read the API\): forbidden: User "system:anonymous"/,
    );
  });
});

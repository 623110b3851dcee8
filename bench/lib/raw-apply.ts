/**
 * The physical baseline: the same server-side apply PATCH requests driftless
 * sends, sent raw from Node (HTTP/2 on one TLS connection, as driftless and
 * kubectl send them; as many in flight as driftless sends) with nothing else — no
 * discovery, no existence LIST, no changeset. What the API server can take on
 * this machine bounds any client's time.
 */
import http2 from 'node:http2';
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { APPLY_CONCURRENCY } from '../../src/apply/apply-objects.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';

/** The REST collection of each kind the bench objects use; raw means no discovery. */
const COLLECTIONS: Record<string, string> = {
  'v1/ConfigMap': '/api/v1/namespaces/{ns}/configmaps',
  'v1/Service': '/api/v1/namespaces/{ns}/services',
  'apps/v1/Deployment': '/apis/apps/v1/namespaces/{ns}/deployments',
};

function pathOf(object: KubeObject): string {
  const collection = COLLECTIONS[`${object.apiVersion}/${object.kind}`];
  if (!collection || !object.metadata.namespace) {
    throw new Error(`raw apply: no path for ${object.apiVersion}/${object.kind}`);
  }
  return `${collection.replace('{ns}', object.metadata.namespace)}/${object.metadata.name}`;
}

/** Applies `objects` with `concurrency` requests in flight; rejects on the first non-2xx. */
export async function rawApply(
  kc: KubeConfig,
  objects: readonly KubeObject[],
  fieldManager: string,
  concurrency = APPLY_CONCURRENCY,
): Promise<void> {
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  // HTTP/2 on one connection, as driftless and kubectl send (src/cluster/kube-connection.ts).
  const session = http2.connect(server.origin, {
    ca: options.ca,
    cert: options.cert,
    key: options.key,
  });
  session.on('error', () => undefined);
  const send = (object: KubeObject): Promise<void> =>
    new Promise((resolve, reject) => {
      const body = Buffer.from(JSON.stringify(object));
      const stream = session.request({
        ':method': 'PATCH',
        ':path': `${pathOf(object)}?fieldManager=${fieldManager}&force=true`,
        ...(options.headers as Record<string, string> | undefined),
        'content-type': 'application/apply-patch+yaml',
        'content-length': body.length,
        accept: 'application/json',
      });
      let status = 0;
      stream.on('response', (headers) => (status = Number(headers[':status'])));
      stream.resume();
      stream.on('end', () =>
        status < 300 && status > 0
          ? resolve()
          : reject(new Error(`raw apply ${pathOf(object)}: HTTP ${status}`)),
      );
      stream.on('error', reject);
      stream.end(body);
    });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) await send(objects[next++] as KubeObject);
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    session.close();
  }
}

/**
 * The floor of an unchanged sync's cluster work, as a whole process: plain
 * Node, no driftless code and no library. Reads the test cluster's
 * kubeconfig (its embedded `*-data` fields), connects with TLS, LISTs the
 * namespace's ConfigMaps and parses the answer; exits 2 when fewer than
 * `expected` came back. Run by bench/cli-process.ts:
 * `node list-configmaps.mjs <kubeconfig> <namespace> <expected>`.
 */
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import process from 'node:process';
import { URL } from 'node:url';

const [kubeconfigPath, namespace, expected] = process.argv.slice(2);
const text = readFileSync(kubeconfigPath, 'utf8');
const field = (name) => {
  const match = text.match(new RegExp(`${name}: (\\S+)`));
  if (!match) throw new Error(`${kubeconfigPath}: no ${name}`);
  return match[1];
};
const server = new URL(field('server'));
const pem = (name) => Buffer.from(field(name), 'base64');
const request = https.request(
  {
    host: server.hostname,
    port: server.port,
    path: `/api/v1/namespaces/${namespace}/configmaps`,
    ca: pem('certificate-authority-data'),
    cert: pem('client-certificate-data'),
    key: pem('client-key-data'),
    headers: { accept: 'application/json' },
  },
  (response) => {
    const chunks = [];
    response.on('data', (chunk) => chunks.push(chunk));
    response.on('end', () => {
      const list = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (!Array.isArray(list.items) || list.items.length < Number(expected)) process.exitCode = 2;
    });
  },
);
request.on('error', (error) => {
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
});
request.end();

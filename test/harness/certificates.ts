/**
 * The test cluster's PKI, made with the openssl CLI (Node's crypto makes keys
 * but not X.509 certificates): a CA, the API server's serving certificate, an
 * admin client certificate (group system:masters) and the service-account
 * signing key pair — what envtest generates for its control plane.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface ClusterCertificates {
  readonly caCert: string;
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPublicKey: string;
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  await execFileAsync('openssl', args, { cwd }).catch(
    (error: { stderr?: string; message: string }) => {
      throw new Error(`openssl ${args[0]} failed: ${error.stderr ?? error.message}`);
    },
  );
}

/** Creates a key and a certificate signed by the CA in `dir`, with optional SANs. */
async function issue(
  dir: string,
  name: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await openssl(['genrsa', '-out', `${name}.key`, '2048'], dir);
  await openssl(
    ['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`],
    dir,
  );
  await writeFile(join(dir, `${name}.ext`), extensions);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '30',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
}

/** A CA, `ca.crt` and `ca.key` in `dir`. */
async function createCa(dir: string): Promise<void> {
  await openssl(['genrsa', '-out', 'ca.key', '2048'], dir);
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-subj',
      '/CN=driftless-test-ca',
      '-days',
      '30',
      '-out',
      'ca.crt',
    ],
    dir,
  );
}

/** The extensions of a serving certificate for the loopback address. */
const LOOPBACK_SERVER =
  'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n';

/** A CA and a serving certificate for 127.0.0.1 and localhost, for a test server with TLS. */
export async function generateServingCertificate(
  dir: string,
): Promise<{ readonly caCert: string; readonly cert: string; readonly key: string }> {
  await createCa(dir);
  await issue(
    dir,
    'server',
    '/CN=localhost',
    `${LOOPBACK_SERVER}subjectAltName=IP:127.0.0.1,DNS:localhost\n`,
  );
  return {
    caCert: join(dir, 'ca.crt'),
    cert: join(dir, 'server.crt'),
    key: join(dir, 'server.key'),
  };
}

/** Generates every certificate and key the control plane needs into `dir`. */
export async function generateCertificates(dir: string): Promise<ClusterCertificates> {
  await createCa(dir);
  await issue(
    dir,
    'apiserver',
    '/CN=kube-apiserver',
    `${LOOPBACK_SERVER}subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc\n`,
  );
  await issue(
    dir,
    'admin',
    '/O=system:masters/CN=driftless-admin',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  await openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  await openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    servingCert: join(dir, 'apiserver.crt'),
    servingKey: join(dir, 'apiserver.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPublicKey: join(dir, 'sa.pub'),
  };
}

/** A kubeconfig for `server` that authenticates with the admin client certificate. */
export async function adminKubeconfig(server: string, certs: ClusterCertificates): Promise<string> {
  const b64 = async (file: string): Promise<string> => (await readFile(file)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: driftless-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(certs.caCert)}`,
    'users:',
    '- name: driftless-admin',
    '  user:',
    `    client-certificate-data: ${await b64(certs.adminCert)}`,
    `    client-key-data: ${await b64(certs.adminKey)}`,
    'contexts:',
    '- name: driftless-test',
    '  context: {cluster: driftless-test, user: driftless-admin}',
    'current-context: driftless-test',
    '',
  ].join('\n');
}

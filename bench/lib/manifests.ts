/**
 * The objects benchmarks apply: mostly ConfigMaps with a few Deployments and
 * Services mixed in (1 in 50 of each), like a real application's manifests.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import type { KubeObject } from '../../src/cluster/kube-object.ts';

/**
 * `count` objects; `namespace` omitted leaves it to the track's default
 * namespace (Git repositories) or kubectl's `-n`. `revision` goes into every
 * object's data, so each revision changes every object.
 */
export function benchObjects(count: number, namespace?: string, revision = 0): KubeObject[] {
  return Array.from({ length: count }, (_, i) => benchObject(i, namespace, revision));
}

/** `count` ConfigMaps only (those {@link benchObjects} writes), in the default namespace. */
export function benchConfigMaps(count: number): KubeObject[] {
  return Array.from({ length: count }, (_, i) => benchConfigMap(i, undefined, 0));
}

function benchMetadata(i: number, namespace: string | undefined) {
  const name = `bench-${String(i).padStart(5, '0')}`;
  return { name, ...(namespace ? { namespace } : {}), labels: { app: name } };
}

function benchConfigMap(i: number, namespace: string | undefined, revision: number): KubeObject {
  const metadata = benchMetadata(i, namespace);
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata,
    data: {
      revision: String(revision),
      'settings.yaml': `feature: ${metadata.name}\nlevel: ${i % 7}\nenabled: true\n`,
    },
  };
}

function benchObject(i: number, namespace: string | undefined, revision: number): KubeObject {
  const metadata = benchMetadata(i, namespace);
  const name = metadata.name;
  if (i % 50 === 10) {
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata,
      spec: {
        // No replicas: the controller manager would otherwise create pods
        // (never scheduled here) and load the API server during the next measurement.
        replicas: 0,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            containers: [
              {
                name: 'app',
                image: 'registry.k8s.io/pause:3.10',
                env: [{ name: 'REVISION', value: String(revision) }],
                resources: { requests: { cpu: '10m', memory: '16Mi' } },
              },
            ],
          },
        },
      },
    };
  }
  if (i % 50 === 35) {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata,
      spec: {
        // Headless: the test cluster's service range holds only 254 addresses.
        clusterIP: 'None',
        selector: { app: name },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      },
    };
  }
  return benchConfigMap(i, namespace, revision);
}

/** The kinds among `objects`, for the drift request goal (kinds + 10). */
export function kindsOf(objects: readonly KubeObject[]): number {
  return new Set(objects.map((o) => `${o.apiVersion}/${o.kind}`)).size;
}

/** `objects` as YAML files, `perFile` documents each: path -> content. */
export function manifestFiles(objects: readonly KubeObject[], perFile = 1): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < objects.length; i += perFile) {
    const chunk = objects.slice(i, i + perFile);
    const name = `${(chunk[0] as KubeObject).metadata.name}.yaml`;
    files[name] = chunk.map((object) => dump(object)).join('---\n');
  }
  return files;
}

/** Writes {@link manifestFiles} into `dir` (for `kubectl -f dir/`). */
export async function writeManifests(
  dir: string,
  objects: readonly KubeObject[],
  perFile = 1,
): Promise<void> {
  await Promise.all(
    Object.entries(manifestFiles(objects, perFile)).map(([name, content]) =>
      writeFile(join(dir, name), content),
    ),
  );
}

/**
 * A job larger than a queue message: the write-back of a Grafana dashboard
 * ConfigMap changed in the cluster, which carries the dashboard's JSON as
 * the cluster has it and as Git had it.
 */
import type { WriteBackJob } from '../../src/sync/jobs.ts';

/** The write-back with `chars` characters of dashboard JSON on each side (non-ASCII on one). */
export function largeWriteBackJob(chars: number): WriteBackJob {
  return {
    type: 'writeBack',
    track: 'dashboards',
    revision: 'c'.repeat(40),
    trigger: 'schedule',
    changes: [
      {
        subject: 'ConfigMap/monitoring/grafana-overview',
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: 'grafana-overview',
        namespace: 'monitoring',
        file: 'dashboards/overview.yaml',
        line: 1,
        fields: [
          {
            path: '/data/overview.json',
            value: JSON.stringify({ panels: 'ü'.repeat(chars) }),
            base: JSON.stringify({ panels: 'a'.repeat(chars) }),
          },
        ],
      },
    ],
  };
}

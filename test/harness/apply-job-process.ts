/**
 * One apply job in a process of its own, as the apply function runs it: a
 * fault test kills this process (SIGKILL) while the job holds the track's
 * lease. Reads one JSON argument — the driftless.yaml text, the fs store's
 * directory, the kubeconfig and the job — runs the job through runJob and
 * prints its summary as one JSON line.
 *
 *   node --import tsx test/harness/apply-job-process.ts '{"config": ..., "store": ..., "kubeconfig": ..., "job": ...}'
 */
import { endpointFromFile } from '../../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import { parseConfig } from '../../src/config/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { executeApplyJob } from '../../src/sync/execute-job.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { runJob, summarizeJob } from '../../src/sync/run-job.ts';

/** What the parent passes. */
export interface ApplyJobProcessInput {
  readonly config: string;
  readonly store: string;
  readonly kubeconfig: string;
  readonly job: Job;
}

const input = JSON.parse(process.argv[2] ?? '{}') as ApplyJobProcessInput;
const store = new FsStore({ path: input.store });
const cluster = KubeApiCluster.forEndpoint(endpointFromFile(input.kubeconfig));
const done = await runJob(
  input.job,
  {
    tracks: parseConfig(input.config, 'driftless.yaml').tracks,
    artifacts: store,
    state: store,
    queue: { enqueue: async () => undefined },
    cluster: async () => cluster,
  },
  executeApplyJob as Parameters<typeof runJob>[2],
);
process.stdout.write(`${JSON.stringify(summarizeJob(done))}\n`);

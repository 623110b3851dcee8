/** The commands of the `driftless` CLI, as DESIGN.md fixes them. */
export interface CommandSpec {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'sync',
    usage: 'sync     [-c FILE] [--track NAME] [--revision REV] [-o text|json]',
    summary: 'fetch, render and apply tracks, pruning what left Git',
  },
  {
    name: 'diff',
    usage: 'diff     [-c FILE] --track NAME [-o text|json]',
    summary: 'show what sync would change (server dry-run)',
  },
  {
    name: 'drift',
    usage: 'drift    [-c FILE] [--track NAME] [--detect-only] [-o text|json]',
    summary: 'detect and correct changes made by hand',
  },
  {
    name: 'rollback',
    usage: 'rollback [-c FILE] --track NAME (--revision REV | --previous) [-o text|json]',
    summary: 'apply a stored revision and pin the track',
  },
  {
    name: 'unpin',
    usage: 'unpin    [-c FILE] --track NAME',
    summary: 'resume following Git after a rollback',
  },
  {
    name: 'history',
    usage: 'history  [-c FILE] --track NAME [-o text|json]',
    summary: 'list sync attempts, newest first',
  },
  {
    name: 'status',
    usage: 'status   [-c FILE] [--track NAME] [-o text|json]',
    summary: 'show conditions, revisions and inventory',
  },
  {
    name: 'render',
    usage: 'render   [-c FILE] --track NAME [--revision REV]',
    summary: 'print the manifests a revision renders to',
  },
  {
    name: 'serve',
    usage: 'serve    [-c FILE] [--port 8080]',
    summary: 'run webhooks, scheduler and queue in one process',
  },
];

/**
 * The commands of the `driftless` CLI and the flags each accepts, as DESIGN.md fixes them, and
 * `unlock` besides (docs/cli.md).
 */

/** Every flag of the CLI, by its long name. */
export const OPTIONS = {
  config: { type: 'string', short: 'c' },
  output: { type: 'string', short: 'o' },
  track: { type: 'string' },
  revision: { type: 'string' },
  previous: { type: 'boolean' },
  'detect-only': { type: 'boolean' },
  port: { type: 'string' },
  policy: { type: 'string' },
  objects: { type: 'boolean' },
  lease: { type: 'string' },
} as const satisfies Record<string, { type: 'string' | 'boolean'; short?: string }>;

export type OptionName = keyof typeof OPTIONS;

export type CommandName =
  | 'sync'
  | 'diff'
  | 'drift'
  | 'rollback'
  | 'unpin'
  | 'suspend'
  | 'resume'
  | 'delete'
  | 'unlock'
  | 'history'
  | 'status'
  | 'render'
  | 'serve';

export interface CommandSpec {
  readonly name: CommandName;
  readonly usage: string;
  readonly summary: string;
  /** Flags the command accepts; any other is a usage error. */
  readonly options: readonly OptionName[];
  /** Flags that must be given. */
  readonly required?: readonly OptionName[];
  /** Groups of which exactly one flag must be given. */
  readonly exactlyOne?: readonly (readonly OptionName[])[];
  /** `[flag, needs]`: the first flag is only accepted together with the second. */
  readonly needs?: readonly (readonly [OptionName, OptionName])[];
  /**
   * Holds a track's apply lease while it works: the first SIGINT or SIGTERM
   * asks it to stop and record where it got, rather than ending it and leaving
   * the lease to expire (interrupts.ts).
   */
  readonly stopsCleanly?: true;
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'sync',
    stopsCleanly: true,
    usage: 'sync     [-c FILE] [--track NAME] [--revision REV] [-o text|json]',
    summary: 'fetch, render and apply tracks, pruning what left Git',
    options: ['config', 'track', 'revision', 'output'],
    // A revision names a commit of one repository: across every track it means nothing.
    needs: [['revision', 'track']],
  },
  {
    name: 'diff',
    usage: 'diff     [-c FILE] --track NAME [-o text|json]',
    summary: 'show what sync would change (server dry-run)',
    options: ['config', 'track', 'output'],
    required: ['track'],
  },
  {
    name: 'drift',
    stopsCleanly: true,
    usage: 'drift    [-c FILE] [--track NAME] [--detect-only] [-o text|json]',
    summary: 'detect and correct changes made by hand',
    options: ['config', 'track', 'detect-only', 'output'],
  },
  {
    name: 'rollback',
    stopsCleanly: true,
    usage: 'rollback [-c FILE] --track NAME (--revision REV | --previous) [-o text|json]',
    summary: 'apply a stored revision and pin the track',
    options: ['config', 'track', 'revision', 'previous', 'output'],
    required: ['track'],
    exactlyOne: [['revision', 'previous']],
  },
  {
    name: 'unpin',
    // Its sync holds the apply lease: Ctrl-C ends it as it ends `sync`.
    stopsCleanly: true,
    usage: 'unpin    [-c FILE] --track NAME',
    summary: 'resume following Git after a rollback',
    options: ['config', 'track'],
    required: ['track'],
  },
  {
    name: 'suspend',
    usage: 'suspend  [-c FILE] --track NAME',
    summary: 'stop webhooks, polls and drift checks for a track (stored state: no redeploy)',
    options: ['config', 'track'],
    required: ['track'],
  },
  {
    name: 'resume',
    stopsCleanly: true,
    usage: 'resume   [-c FILE] --track NAME',
    summary: 'undo suspend and sync the track at once',
    options: ['config', 'track'],
    required: ['track'],
  },
  {
    name: 'delete',
    stopsCleanly: true,
    usage: 'delete   [-c FILE] --track NAME [--policy Delete|Orphan|MirrorPrune] [-o text|json]',
    summary: "collect a track's objects by its deletion policy and remove its state",
    options: ['config', 'track', 'policy', 'output'],
    required: ['track'],
  },
  {
    name: 'unlock',
    usage: 'unlock   [-c FILE] --track NAME --lease ID [-o text|json]',
    summary:
      'free a track whose apply lease a dead process holds (the id from status or the busy error)',
    options: ['config', 'track', 'lease', 'output'],
    required: ['track', 'lease'],
  },
  {
    name: 'history',
    usage: 'history  [-c FILE] --track NAME [-o text|json]',
    summary: 'list sync attempts, newest first',
    options: ['config', 'track', 'output'],
    required: ['track'],
  },
  {
    name: 'status',
    usage: 'status   [-c FILE] [--track NAME [--objects]] [-o text|json]',
    summary: 'show conditions, revisions and inventory; --objects: each object live',
    options: ['config', 'track', 'objects', 'output'],
    needs: [['objects', 'track']],
  },
  {
    name: 'render',
    usage: 'render   [-c FILE] --track NAME [--revision REV]',
    summary: 'print the manifests a revision renders to',
    options: ['config', 'track', 'revision'],
    required: ['track'],
  },
  {
    name: 'serve',
    usage: 'serve    [-c FILE] [--port 8080]',
    summary: 'run webhooks, scheduler and queue in one process',
    options: ['config', 'port'],
  },
];

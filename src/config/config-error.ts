import { DriftlessError } from '../errors.ts';

/** One problem found in a configuration file. */
export interface ConfigIssue {
  /** The file as the user named it (e.g. `driftless.yaml`), so messages match what they typed. */
  readonly file: string;
  /** Where in the file, in JS-ish notation (`tracks[2].interval`); empty for the whole file. */
  readonly path: string;
  /** What is wrong, quoting the offending value. */
  readonly message: string;
  /** 1-based line, for problems found while reading YAML. */
  readonly line?: number;
  /** 1-based column, for problems found while reading YAML. */
  readonly column?: number;
}

/** Renders an issue as one line: `file[:line:col]: path: message`. */
export function formatConfigIssue(issue: ConfigIssue): string {
  const where =
    issue.line === undefined ? issue.file : `${issue.file}:${issue.line}:${issue.column ?? 1}`;
  return issue.path === ''
    ? `${where}: ${issue.message}`
    : `${where}: ${issue.path}: ${issue.message}`;
}

/**
 * The configuration is invalid; nothing was attempted. Exit code 2.
 *
 * Carries every problem found rather than the first, so a user fixes a file in
 * one pass instead of one error per run.
 */
export class ConfigError extends DriftlessError {
  readonly code = 'CONFIG_INVALID';
  /** Every problem found, in file order as far as it is known. */
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[], options?: { cause?: unknown }) {
    super(issues.map(formatConfigIssue).join('\n'), options);
    this.issues = issues;
  }
}

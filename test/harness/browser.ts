/**
 * A real browser for the dashboard's UI tests: Debian's chromium (apt-get
 * install chromium; .ci/run installs it) driven by playwright-core, which
 * downloads no browser of its own. Each page's console errors and uncaught
 * exceptions are collected, so a test can assert there were none, and
 * checkAccessibility runs axe-core in a page.
 */
import { existsSync } from 'node:fs';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Where Debian's chromium package puts the browser; DRIFTLESS_CHROMIUM overrides it. */
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/**
 * Something a page reported as wrong: a console.error, an uncaught
 * exception, or a `resource`: Chromium's own console error for any answer of
 * 4xx/5xx ("Failed to load resource"), which an expected 401 or 404 of the
 * API causes too — a test filters those by `url`.
 */
export interface PageProblem {
  readonly kind: 'console' | 'pageerror' | 'resource';
  readonly text: string;
  /** The script or resource the console message is about, when known. */
  readonly url?: string;
}

export interface LaunchedBrowser {
  readonly browser: Browser;
  /** A context of its own (cookies, sessionStorage) per call; problems collected from the start. */
  newPage(options?: Parameters<Browser['newContext']>[0]): Promise<Page>;
  /** What `page` reported so far, in order. */
  problemsOf(page: Page): readonly PageProblem[];
  close(): Promise<void>;
}

function chromiumPath(): string {
  const path = process.env['DRIFTLESS_CHROMIUM'] ?? DEFAULT_CHROMIUM;
  if (!existsSync(path)) {
    throw new Error(
      `no chromium at ${path}: install Debian's package (apt-get install chromium) ` +
        'or set DRIFTLESS_CHROMIUM to a Chromium binary',
    );
  }
  return path;
}

/**
 * Launches headless chromium. The sandbox needs user namespaces that root
 * (containers, CI) cannot use: only then does it run with --no-sandbox.
 */
export async function launchBrowser(): Promise<LaunchedBrowser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  const problems = new WeakMap<Page, PageProblem[]>();
  const contexts: BrowserContext[] = [];

  const watch = (page: Page): void => {
    const list: PageProblem[] = [];
    problems.set(page, list);
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      const url = message.location().url;
      const text = message.text();
      const kind = text.startsWith('Failed to load resource') ? 'resource' : 'console';
      list.push({ kind, text, ...(url ? { url } : {}) });
    });
    page.on('pageerror', (error) => {
      list.push({ kind: 'pageerror', text: error.stack ?? error.message });
    });
  };

  return {
    browser,
    async newPage(options) {
      const context = await browser.newContext(options);
      contexts.push(context);
      // Pages the page opens (window.open) are watched too.
      context.on('page', watch);
      const page = await context.newPage();
      if (!problems.has(page)) watch(page);
      return page;
    },
    problemsOf(page) {
      return problems.get(page) ?? [];
    },
    async close() {
      await Promise.allSettled(contexts.map((context) => context.close()));
      await browser.close();
    },
  };
}

/** An axe-core violation, as much of it as a failing assertion needs. */
export interface AccessibilityViolation {
  readonly id: string;
  readonly impact: string;
  readonly help: string;
  readonly helpUrl: string;
  /** CSS selectors of the offending elements, with axe's summary of each. */
  readonly nodes: readonly { readonly target: string; readonly summary: string }[];
}

/**
 * Runs axe-core on the page as it is now (WCAG 2.x A and AA, and axe's best
 * practices) and returns the violations of serious or critical impact.
 * axe is evaluated through the DevTools protocol, which the page's
 * Content-Security-Policy (script-src 'self') does not block, unlike a
 * script tag would be.
 */
export async function checkAccessibility(
  page: Page,
  options: { readonly include?: string; readonly disableRules?: readonly string[] } = {},
): Promise<AccessibilityViolation[]> {
  // These functions run in the page: globalThis is its window (this file has no DOM types).
  const loaded = await page.evaluate(() => 'axe' in globalThis);
  if (!loaded) await page.evaluate(axe.source);
  const results = await page.evaluate(
    async ({ include, disableRules }) => {
      const rules = Object.fromEntries(disableRules.map((id) => [id, { enabled: false }]));
      return (globalThis as unknown as { axe: typeof axe }).axe.run(include ?? 'html', {
        rules,
        resultTypes: ['violations'],
      });
    },
    { include: options.include, disableRules: [...(options.disableRules ?? [])] },
  );
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({
      id: violation.id,
      impact: violation.impact ?? 'unknown',
      help: violation.help,
      helpUrl: violation.helpUrl,
      nodes: violation.nodes.map((node) => ({
        target: node.target.map(String).join(' '),
        summary: node.failureSummary ?? '',
      })),
    }));
}

/** Violations as lines for an assertion message. */
export function describeViolations(violations: readonly AccessibilityViolation[]): string {
  return violations
    .map(
      (violation) =>
        `${violation.impact} ${violation.id}: ${violation.help}\n` +
        violation.nodes
          .map((node) => `  ${node.target}\n    ${node.summary.replaceAll('\n', '\n    ')}`)
          .join('\n'),
    )
    .join('\n');
}

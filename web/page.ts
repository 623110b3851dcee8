/**
 * What every page shares: the refresh loop (every 5 s while the tab is
 * visible), the line that says a refresh failed, and the sign-in prompt for
 * a dashboard that answers 401 until someone signs in.
 */
import { ApiError, isAbort, messageOf } from './api.ts';
import { h, replaceContent } from './dom.ts';
import { openSignIn } from './session.ts';

export const REFRESH_INTERVAL_MS = 5000;

export interface Page {
  readonly title: string;
  readonly element: HTMLElement;
  /** Loads now (after an action, a sign-in), without waiting for the next tick. */
  refresh(): void;
  stop(): void;
}

export interface Poller {
  refreshNow(): void;
  stop(): void;
}

/** Runs `load` now and then `intervalMs` after each run ends, while the tab is visible. */
export function startPolling(
  load: (signal: AbortSignal) => Promise<void>,
  intervalMs: number = REFRESH_INTERVAL_MS,
): Poller {
  const controller = new AbortController();
  let timer: number | undefined;
  let running = false;
  let again = false;

  const schedule = (): void => {
    window.clearTimeout(timer);
    timer = undefined;
    if (controller.signal.aborted || document.visibilityState !== 'visible') return;
    timer = window.setTimeout(() => void run(), intervalMs);
  };
  const run = async (): Promise<void> => {
    if (controller.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    window.clearTimeout(timer);
    running = true;
    try {
      await load(controller.signal);
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      void run();
    } else {
      schedule();
    }
  };
  // A hidden tab stops asking; coming back shows fresh data at once.
  const onVisibility = (): void => {
    if (document.visibilityState === 'visible') void run();
    else window.clearTimeout(timer);
  };
  document.addEventListener('visibilitychange', onVisibility);
  void run();
  return {
    refreshNow: () => void run(),
    stop: () => {
      controller.abort();
      window.clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}

/**
 * The line under a page's heading for failed refreshes (aria-live: a screen
 * reader hears that the data went stale, and nothing on each quiet refresh).
 */
export function refreshStatus(): {
  element: HTMLElement;
  loaded(): void;
  failed(error: unknown, hasData: boolean): void;
} {
  const element = h('div', { class: 'refresh-status', role: 'status', 'aria-live': 'polite' });
  let lastLoaded: Date | null = null;
  return {
    element,
    loaded() {
      lastLoaded = new Date();
      replaceContent(element);
    },
    failed(error, hasData) {
      if (isAbort(error)) return;
      if (error instanceof ApiError && error.status === 401) {
        replaceContent(
          element,
          h(
            'div',
            { class: 'notice notice-sign-in' },
            h('p', null, `Sign in to see this dashboard (${error.message}).`),
            h(
              'button',
              {
                type: 'button',
                class: 'button primary',
                'data-focus-key': 'notice-sign-in',
                onclick: () => openSignIn(error.message),
              },
              'Sign in',
            ),
          ),
        );
        return;
      }
      const stale =
        hasData && lastLoaded !== null
          ? ` Showing what was loaded at ${lastLoaded.toLocaleTimeString()}; retrying every ${REFRESH_INTERVAL_MS / 1000} s.`
          : ` Retrying every ${REFRESH_INTERVAL_MS / 1000} s.`;
      replaceContent(
        element,
        h('p', { class: 'notice notice-error' }, `Could not load: ${messageOf(error)}.${stale}`),
      );
    },
  };
}

/** Whether a value's JSON changed since the last render: refreshes re-render only what did. */
export function changeTracker(): (value: unknown) => boolean {
  let last: string | undefined;
  return (value) => {
    const json = JSON.stringify(value);
    if (json === last) return false;
    last = json;
    return true;
  };
}

/**
 * The dashboard's entry: the page shell, hash routing (`#/` and
 * `#/tracks/<track>` — the link commit statuses carry), and the session.
 */
import { messageOf } from './api.ts';
import { h, replaceContent } from './dom.ts';
import { refreshRelativeTimes } from './format.ts';
import { overviewPage } from './overview.ts';
import type { Page } from './page.ts';
import { loadSession, onSessionChange, renderSessionArea } from './session.ts';
import { trackPage } from './track-page.ts';

const APP_NAME = 'Driftless';

function notFoundPage(hash: string): Page {
  const heading = h('h1', { tabindex: -1 }, 'Page not found');
  return {
    title: 'Page not found',
    element: h(
      'div',
      { class: 'page' },
      h('div', { class: 'page-header' }, heading),
      h('p', null, `Nothing lives at ${hash}. `, h('a', { href: '#/' }, 'See all tracks')),
    ),
    refresh: () => undefined,
    stop: () => undefined,
  };
}

function pageFor(hash: string): Page {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/') return overviewPage();
  const onTrack = /^\/tracks\/([^/]+)\/?$/.exec(path);
  if (onTrack) {
    try {
      return trackPage(decodeURIComponent(onTrack[1]!));
    } catch {
      return notFoundPage(hash);
    }
  }
  return notFoundPage(hash);
}

function start(): void {
  const sessionArea = h('div', { class: 'session' });
  const main = h('main', { id: 'main' });
  document.body.replaceChildren(
    h(
      'header',
      { class: 'app-header' },
      h(
        'nav',
        { 'aria-label': 'Main', class: 'app-nav' },
        h('a', { href: '#/', class: 'brand' }, APP_NAME),
        h('a', { href: '#/', class: 'nav-link' }, 'Tracks'),
      ),
      sessionArea,
    ),
    main,
  );

  let page: Page | null = null;
  const route = (moveFocus: boolean): void => {
    page?.stop();
    page = pageFor(location.hash);
    document.title = `${page.title} · ${APP_NAME}`;
    replaceContent(main, page.element);
    // After navigating, start reading at the new page's heading, as a page load would.
    if (moveFocus) page.element.querySelector<HTMLElement>('h1')?.focus();
    window.scrollTo(0, 0);
  };
  window.addEventListener('hashchange', () => route(true));

  onSessionChange(() => {
    renderSessionArea(sessionArea);
    page?.refresh();
  });
  // Relative times ("3 min ago") age between refreshes that change nothing else.
  window.setInterval(() => refreshRelativeTimes(main), 15_000);

  // The session first: a track page's buttons depend on it, and should not flicker.
  loadSession()
    .catch((error: unknown) => {
      replaceContent(
        sessionArea,
        h('span', { class: 'header-user' }, `Session unknown: ${messageOf(error)}`),
      );
    })
    .finally(() => route(false));
}

start();

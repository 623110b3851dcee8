/**
 * The few DOM helpers the UI is built from. Everything the API answers is
 * untrusted text: it only ever reaches the page as text nodes or attribute
 * values, never as markup (no innerHTML anywhere in web/).
 */

export type Child = Node | string | number | null | undefined | false | readonly Child[];

type Listener = (event: Event) => void;
type AttrValue = string | number | boolean | null | undefined | Listener;
export type Attrs = Record<string, AttrValue>;

/** Set as properties rather than attributes: their live state, not their initial one. */
const PROPERTIES = new Set(['value', 'checked', 'open', 'selected', 'disabled']);

function appendChildren(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) appendChildren(parent, child as readonly Child[]);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/**
 * `h('a', { href: '#/', class: 'link' }, 'Tracks')`: an element with
 * attributes, listeners (`onclick`) and children (nodes or text).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  const properties: [string, AttrValue][] = [];
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else if (PROPERTIES.has(name)) {
      properties.push([name, value]);
    } else {
      element.setAttribute(name, value === true ? '' : String(value));
    }
  }
  appendChildren(element, children);
  // After the children: a select's value needs its options first.
  for (const [name, value] of properties) {
    (element as unknown as Record<string, AttrValue>)[name] = value;
  }
  return element;
}

/** A fragment of children, for helpers that return several nodes. */
export function fragment(...children: Child[]): DocumentFragment {
  const result = document.createDocumentFragment();
  appendChildren(result, children);
  return result;
}

/**
 * Replaces `container`'s children, keeping the keyboard focus on the
 * element with the same `data-focus-key` if the old one had it: a refresh
 * must not throw a keyboard user back to the top of the page.
 */
export function replaceContent(container: Element, ...children: Child[]): void {
  const active = document.activeElement;
  const key =
    active instanceof HTMLElement && container.contains(active)
      ? active.dataset['focusKey']
      : undefined;
  const replacement = fragment(...children);
  container.replaceChildren(replacement);
  if (key !== undefined) {
    const same = [...container.querySelectorAll<HTMLElement>('[data-focus-key]')].find(
      (element) => element.dataset['focusKey'] === key,
    );
    same?.focus({ preventScroll: true });
  }
}

/** A unique id for label/aria references. */
let lastId = 0;
export function uniqueId(prefix: string): string {
  lastId += 1;
  return `${prefix}-${lastId}`;
}

/**
 * The box a wide table scrolls sideways in on a narrow screen: focusable and
 * named, so a keyboard can scroll it too.
 */
export function scrollBox(label: string, ...children: Child[]): HTMLDivElement {
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': label },
    ...children,
  );
}

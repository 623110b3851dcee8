/**
 * Modal dialogs on the native `<dialog>`: showModal() traps focus and makes
 * the page behind inert, Escape cancels; focus goes back to the button that
 * opened the dialog when it closes.
 */
import { h, uniqueId, type Child } from './dom.ts';

export interface DialogOptions {
  readonly title: string;
  /** The form's content: explanation and fields. */
  readonly body: readonly Child[];
  readonly confirmLabel: string;
  /** `danger` for actions that change what runs in the cluster. */
  readonly tone?: 'primary' | 'danger';
  /**
   * Runs on confirm, the confirm button disabled meanwhile. A string is an
   * error shown in the dialog (which stays open); anything else closes it.
   */
  readonly onConfirm: (form: HTMLFormElement) => Promise<string | undefined>;
}

export function openDialog(options: DialogOptions): HTMLDialogElement {
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const titleId = uniqueId('dialog-title');
  const error = h('p', { class: 'dialog-error', role: 'alert' });
  const confirm = h(
    'button',
    { type: 'submit', class: `button ${options.tone ?? 'primary'}` },
    options.confirmLabel,
  );
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const form = h(
    'form',
    { class: 'dialog-form' },
    h('h2', { id: titleId, class: 'dialog-title' }, options.title),
    ...options.body,
    error,
    h('div', { class: 'dialog-buttons' }, cancel, confirm),
  );
  const dialog = h('dialog', { 'aria-labelledby': titleId }, form);

  cancel.addEventListener('click', () => dialog.close());
  form.addEventListener('submit', (event) => {
    // The page's CSP has form-action 'none': forms never submit, scripts handle them.
    event.preventDefault();
    if (confirm.disabled) return;
    confirm.disabled = true;
    error.textContent = '';
    void options
      .onConfirm(form)
      .then((problem) => {
        if (problem === undefined) dialog.close();
        else error.textContent = problem;
      })
      .finally(() => {
        confirm.disabled = false;
      });
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    // The opener may have been re-rendered meanwhile: then its replacement with the same key.
    const key = opener?.dataset['focusKey'];
    const target =
      opener?.isConnected === true
        ? opener
        : key === undefined
          ? null
          : [...document.querySelectorAll<HTMLElement>('[data-focus-key]')].find(
              (element) => element.dataset['focusKey'] === key,
            );
    target?.focus();
  });

  document.body.appendChild(dialog);
  dialog.showModal();
  // No autofocus field in the body: start on Cancel, the safe choice for a confirmation.
  if (!form.querySelector('[autofocus]')) cancel.focus();
  return dialog;
}

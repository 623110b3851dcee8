/**
 * The track page's actions: each asks for confirmation in a dialog naming
 * the track and what will happen, then queues the job and says so (or why
 * not) in a live region.
 */
import type { ActionAnswer, DashboardAction, TrackDetail } from '../src/dashboard/types.ts';
import { ApiError, messageOf, postAction } from './api.ts';
import { openDialog } from './dialog.ts';
import { h, replaceContent, uniqueId, type Child } from './dom.ts';
import { absoluteTime, firstLine, shortRevision } from './format.ts';
import { currentSession, openSignIn, signInElsewhere } from './session.ts';

interface ActionText {
  readonly label: string;
  readonly title: (track: string) => string;
  readonly explain: (detail: TrackDetail) => Child[];
  readonly confirm: string;
  readonly tone: 'primary' | 'danger';
}

const ACTIONS: Record<DashboardAction, ActionText> = {
  sync: {
    label: 'Sync now',
    title: (track) => `Sync ${track} now?`,
    explain: (detail) => [
      h('p', null, "Fetches the track's reference now and applies it, as a webhook would."),
      detail.row.status.suspended
        ? h(
            'p',
            { class: 'notice' },
            detail.row.suspendedInConfig === true
              ? 'This track is suspended in driftless.yaml (suspend: true): the job is skipped until that is removed.'
              : 'This track is suspended: the job is skipped until it is resumed.',
          )
        : null,
      detail.row.status.pinned
        ? h(
            'p',
            { class: 'notice' },
            `This track is pinned at ${shortRevision(detail.row.status.pinned)}: it stays there until unpinned.`,
          )
        : null,
    ],
    confirm: 'Sync',
    tone: 'primary',
  },
  rollback: {
    label: 'Roll back…',
    title: (track) => `Roll back ${track}`,
    explain: () => [
      h(
        'p',
        null,
        'Applies the stored revision you choose and pins the track there: new commits are not deployed until you unpin it.',
      ),
    ],
    confirm: 'Roll back',
    tone: 'danger',
  },
  unpin: {
    label: 'Unpin',
    title: (track) => `Unpin ${track}?`,
    explain: (detail) => [
      h(
        'p',
        null,
        `Removes the pin at ${shortRevision(detail.row.status.pinned ?? '')}: the newest revision of the track's reference is fetched and applied.`,
      ),
    ],
    confirm: 'Unpin',
    tone: 'danger',
  },
  suspend: {
    label: 'Suspend',
    title: (track) => `Suspend ${track}?`,
    explain: () => [
      h(
        'p',
        null,
        'Webhooks, polls and drift checks leave the track alone until it is resumed. Nothing in the cluster changes now.',
      ),
    ],
    confirm: 'Suspend',
    tone: 'danger',
  },
  resume: {
    label: 'Resume',
    title: (track) => `Resume ${track}?`,
    explain: () => [
      h(
        'p',
        null,
        'Webhooks, polls and drift checks handle the track again, starting with a sync now.',
      ),
    ],
    confirm: 'Resume',
    tone: 'primary',
  },
};

/** What the answer of an action reads as. */
function answered(answer: ActionAnswer): string {
  const what =
    answer.action === 'rollback' && answer.revision !== undefined
      ? `Rollback of ${answer.track} to ${shortRevision(answer.revision)}`
      : `${ACTIONS[answer.action].confirm} of ${answer.track}`;
  return `${what} queued by ${answer.by}.`;
}

function rollbackChoice(detail: TrackDetail): {
  field: HTMLElement;
  body: () => Record<string, unknown>;
} {
  const id = uniqueId('rollback-target');
  const applied = detail.row.status.appliedRevision;
  const select = h(
    'select',
    { id, name: 'target', autofocus: true },
    h('option', { value: 'previous' }, 'The previous revision (the one applied before this one)'),
    detail.revisions.map((stored) =>
      h(
        'option',
        { value: stored.revision },
        [
          shortRevision(stored.revision),
          stored.commit
            ? firstLine(stored.commit.message)
            : `stored ${absoluteTime(stored.storedAt)}`,
          stored.revision === applied ? '(applied now)' : '',
        ]
          .filter((part) => part !== '')
          .join(' — '),
      ),
    ),
  );
  return {
    field: h('div', { class: 'field' }, h('label', { for: id }, 'Revision'), select),
    body: () => (select.value === 'previous' ? { previous: true } : { revision: select.value }),
  };
}

export interface ActionBar {
  readonly element: HTMLElement;
  render(detail: TrackDetail): void;
}

/**
 * The buttons, the reason they are disabled, and the live region for
 * answers. `latest` gives the page's newest data when a dialog opens;
 * `onQueued` refreshes the page after an action.
 */
export function actionBar(
  track: string,
  latest: () => TrackDetail | null,
  onQueued: () => void,
): ActionBar {
  const buttons = h('div', { class: 'action-buttons' });
  const result = h('div', { class: 'action-result', role: 'status', 'aria-live': 'polite' });
  const element = h('div', { class: 'actions' }, buttons, result);
  const reasonId = uniqueId('actions-reason');

  function announce(text: string, tone: 'success' | 'error', signIn = false): void {
    replaceContent(
      result,
      h(
        'p',
        { class: `notice notice-${tone}` },
        text,
        signIn
          ? [
              ' ',
              h(
                'button',
                { type: 'button', class: 'button small', onclick: () => openSignIn(text) },
                'Sign in',
              ),
            ]
          : null,
      ),
    );
  }

  function confirmAction(action: DashboardAction): void {
    const detail = latest();
    if (detail === null) return;
    const text = ACTIONS[action];
    const choice = action === 'rollback' ? rollbackChoice(detail) : null;
    openDialog({
      title: text.title(track),
      body: [...text.explain(detail), choice?.field],
      confirmLabel: text.confirm,
      tone: text.tone,
      onConfirm: async () => {
        try {
          const answer = await postAction(track, action, choice?.body() ?? {});
          announce(answered(answer), 'success');
          onQueued();
        } catch (error) {
          const signIn = error instanceof ApiError && error.status === 401;
          announce(`${text.confirm} of ${track} failed: ${messageOf(error)}`, 'error', signIn);
        }
        return undefined;
      },
    });
  }

  function render(detail: TrackDetail): void {
    const session = currentSession();
    const canAct = session?.canAct === true;
    const elsewhere = signInElsewhere(session);
    const { status, suspendedInConfig } = detail.row;
    // Suspended by its config, the track has no toggle: resume could not lift it (refused 409).
    const toggle: DashboardAction[] =
      suspendedInConfig === true ? [] : [status.suspended ? 'resume' : 'suspend'];
    const shown: DashboardAction[] = [
      'sync',
      'rollback',
      ...(status.pinned !== null ? (['unpin'] as const) : []),
      ...toggle,
    ];
    replaceContent(
      buttons,
      shown.map((action) =>
        h(
          'button',
          {
            type: 'button',
            class: `button${action === 'sync' ? ' primary' : ''}`,
            disabled: !canAct,
            'aria-describedby': canAct ? null : reasonId,
            'data-focus-key': `action:${action}`,
            onclick: () => confirmAction(action),
          },
          ACTIONS[action].label,
        ),
      ),
      suspendedInConfig === true
        ? h(
            'p',
            { class: 'actions-reason' },
            'Suspended in driftless.yaml (suspend: true), which Resume cannot lift: remove it there to resume.',
          )
        : null,
      canAct
        ? null
        : h(
            'p',
            { class: 'actions-reason', id: reasonId },
            session?.user ? `${session.user} may not run actions here.` : 'Sign in to run actions.',
            // No form for it on the page (IAM): where to sign in instead of a button.
            session?.user || elsewhere === undefined ? null : ` ${elsewhere}`,
            session?.user || session?.signIn.length === 0 || elsewhere !== undefined
              ? null
              : [
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      class: 'button small',
                      'data-focus-key': 'actions-sign-in',
                      onclick: () => openSignIn(),
                    },
                    'Sign in',
                  ),
                ],
          ),
    );
  }

  return { element, render };
}

import { clear, h } from './dom.js';

const dialog = () => document.getElementById('dialog') as HTMLDialogElement;

/** Asks before an action; resolves true on Confirm. */
export function confirmAction(title: string, body: Node | string, confirmLabel = 'Confirm'): Promise<boolean> {
  return new Promise((resolve) => {
    const d = dialog();
    clear(d);
    const done = (ok: boolean) => {
      d.close();
      resolve(ok);
    };
    d.append(
      h('h3', {}, title),
      h('div', { class: 'dialog-body' }, body),
      h(
        'div',
        { class: 'dialog-buttons' },
        h('button', { type: 'button', 'data-testid': 'dialog-cancel', onclick: () => done(false) }, 'Cancel'),
        h('button', { type: 'button', class: 'primary', 'data-testid': 'dialog-confirm', onclick: () => done(true) }, confirmLabel),
      ),
    );
    d.onclose = () => resolve(false);
    d.showModal();
  });
}

/** Asks for the token (no session yet, or it ended): traded for a session cookie by `signIn`. */
export function askToken(signIn: (token: string) => Promise<boolean>): Promise<void> {
  return new Promise((resolve) => {
    const d = dialog();
    clear(d);
    const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', 'data-testid': 'token-input', placeholder: 'token' });
    const message = h('p', { class: 'error' });
    const submit = async (e: Event) => {
      e.preventDefault();
      if (await signIn(input.value.trim())) {
        d.close();
        resolve();
      } else message.textContent = 'That token is not the one this server uses.';
    };
    d.append(
      h(
        'form',
        { onsubmit: (e: Event) => void submit(e) },
        h('h3', {}, 'Sign in'),
        h('p', {}, 'Paste the token from .braid/token in the project folder (or the one configured for braid ui).'),
        input,
        message,
        h('div', { class: 'dialog-buttons' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'token-submit' }, 'Sign in')),
      ),
    );
    d.onclose = null;
    d.showModal();
  });
}

/** A short-lived message after an action. */
export function toast(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const el = h('div', { class: `toast toast-${kind}`, role: 'status', 'data-testid': 'toast' }, text);
  document.body.append(el);
  setTimeout(() => el.remove(), 6000);
}

import { pathTo } from '../../api/route-table.js';
import type { CallbackLinkUrl } from '../../runtime/wire/index.js';
import { get } from './api.js';
import { h } from './dom.js';
import type { Task } from './types.js';

/** Signal keys a person may send from the panel: a callback term's come only through its links. */
export const sendableKeys = (keys: readonly string[]): string[] => keys.filter((k) => !k.startsWith('callback:'));

/**
 * A task's callback terms, each with a button that fetches its signed links (one per recipient) to copy into a
 * message: the links are capabilities, so they are shown when asked for, not with every refresh.
 */
export function callbackLinks(workflowId: string, task: Task): HTMLElement | null {
  const terms = (task.wait?.terms ?? []).filter((t) => t.kind === 'signal' && t.callback);
  if (terms.length === 0) return null;
  return h(
    'div',
    { class: 'callback-links', 'data-testid': 'callback-links' },
    h('h4', {}, 'Callback links'),
    terms.map((term) => {
      const list = h('ul', { 'data-testid': `links-${term.name}` });
      const show = async () => {
        try {
          const { links } = await get<{ links: CallbackLinkUrl[] }>(pathTo('callbackLinks', { id: workflowId, task: task.name, term: term.name }));
          list.replaceChildren(
            ...links.map((l) =>
              h('li', {}, l.recipient !== null ? `${l.recipient}: ` : '', h('a', { href: l.url ?? l.path, target: '_blank' }, l.url ?? l.path)),
            ),
          );
        } catch (error) {
          list.replaceChildren(h('li', { class: 'error' }, (error as Error).message));
        }
      };
      return h(
        'div',
        {},
        h('button', { type: 'button', 'data-testid': `show-links-${term.name}`, onclick: () => void show() }, `Show links of ${term.name}`),
        list,
      );
    }),
  );
}

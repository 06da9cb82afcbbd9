import { pathTo, roleFor } from '../../api/route-table.js';
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
      // no NUL in the key: a selector cannot match one (CSS reads it as U+FFFD), so a panel drawn again while the
      // links loaded never got them
      const key = JSON.stringify([workflowId, task.name, term.name]);
      const list = h('ul', { 'data-testid': `links-${term.name}`, 'data-links': key });
      const known = shown.get(key);
      if (known) list.replaceChildren(...known());
      // the panel may be drawn again while the links load: fill whichever list shows this term then
      const fill = (items: () => HTMLElement[]) => {
        for (const el of [list, ...document.querySelectorAll(`ul[data-links="${CSS.escape(key)}"]`)]) el.replaceChildren(...items());
      };
      const show = async () => {
        try {
          const { links, description } = await get<{ links: CallbackLinkUrl[]; description: string | null }>(
            pathTo('callbackLinks', { id: workflowId, task: task.name, term: term.name }),
          );
          const items = () => [...(description ? [h('li', { class: 'what', 'data-testid': `what-${term.name}` }, description)] : []), ...links.map(linkItem)];
          shown.set(key, items);
          fill(items);
        } catch (error) {
          fill(() => [h('li', { class: 'error' }, (error as Error).message)]);
        }
      };
      return h(
        'div',
        { 'data-needs': roleFor('callbackLinks') },
        h('button', { type: 'button', 'data-testid': `show-links-${term.name}`, onclick: () => void show() }, `Show links of ${term.name}`),
        list,
      );
    }),
  );
}

/** The links shown so far (and what they ask), by workflow, task and term: a redrawn panel shows them again without asking. */
const shown = new Map<string, () => HTMLElement[]>();

function linkItem(l: CallbackLinkUrl): HTMLElement {
  return h('li', {}, l.recipient !== null ? `${l.recipient}: ` : '', h('a', { href: l.url ?? l.path, target: '_blank' }, l.url ?? l.path));
}

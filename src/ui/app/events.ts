import { pathTo } from '../../api/route-table.js';
import type { EventRecord, TriggerRun } from '../../runtime/wire/index.js';
import { get, type Live } from './api.js';
import { clear, h, json, time } from './dom.js';

/** The event log (braid events): each recent event, its payload, and what each trigger did, its runs linked. */
export function eventsPage(app: HTMLElement, params: URLSearchParams): Live {
  const name = params.get('name') ?? undefined;
  const list = h('div', { class: 'events', 'data-testid': 'events' });
  clear(app);
  app.append(h('h2', {}, name ? `Events: ${name}` : 'Events'), list);
  void (async () => {
    try {
      const { events } = await get<{ events: EventRecord[] }>(pathTo('eventList', {}, { name, limit: 100 }));
      if (events.length === 0) list.append(h('p', { class: 'muted' }, 'No events.'));
      for (const e of events)
        list.append(
          h(
            'section',
            { class: 'event', 'data-event': `${e.name} ${e.event_id}` },
            h(
              'h3',
              {},
              h('a', { href: `/events?name=${encodeURIComponent(e.name)}`, 'data-link': true }, e.name),
              ' ',
              h('span', { class: 'mono' }, e.event_id),
            ),
            h('p', { class: 'muted' }, time(String(e.at))),
            h('ul', {}, e.outcomes.length === 0 ? h('li', { class: 'muted' }, 'it started nothing') : e.outcomes.map(outcome)),
            h('details', {}, h('summary', {}, 'Payload'), json(e.payload)),
          ),
        );
    } catch (error) {
      list.replaceChildren(h('p', { class: 'error' }, (error as Error).message));
    }
  })();
  return { close: () => undefined };
}

function outcome(o: TriggerRun): HTMLElement {
  const head = `${o.workflow} (trigger ${o.trigger + 1}): `;
  switch (o.outcome) {
    case 'started':
    case 'existing':
      return h(
        'li',
        { 'data-outcome': o.outcome },
        head,
        o.outcome === 'started' ? 'started ' : 'found ',
        h('a', { href: `/workflows/${encodeURIComponent(o.id)}`, 'data-link': true, class: 'mono' }, o.id),
      );
    case 'not_matched':
      return h('li', { 'data-outcome': o.outcome, class: 'muted' }, `${head}where is false`);
    case 'failed':
      return h('li', { 'data-outcome': o.outcome, class: 'error' }, `${head}${o.error}`);
  }
}

/** "Started by event NAME ID", linked to the event log, on a run an event started (nothing otherwise). */
export function startedByEvent(id: string): HTMLElement {
  const el = h('p', { class: 'muted', 'data-testid': 'started-by-event', hidden: true });
  void get<{ event: { name: string; event_id: string; at: string } | null }>(pathTo('workflowEvent', { id }))
    .then(({ event }) => {
      if (!event) return;
      el.hidden = false;
      el.append('Started by event ', h('a', { href: `/events?name=${encodeURIComponent(event.name)}`, 'data-link': true }, event.name), ` ${event.event_id}`);
    })
    .catch(() => undefined);
  return el;
}

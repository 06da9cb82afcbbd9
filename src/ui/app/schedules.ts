import { pathTo, roleFor } from '../../api/route-table.js';
import { humanDuration, type ScheduleRecord } from '../../runtime/wire/index.js';
import { get, post } from './api.js';
import { confirmAction, toast } from './dialog.js';
import { badge, clear, h, time } from './dom.js';

/**
 * A workflow's deployed schedules: clock and policies, paused or not, the next ticks (UTC and local), the latest
 * runs; and the operator's pause, resume and run-now, each confirmed, the section read again after.
 */
export async function schedulesSection(workflow: string): Promise<HTMLElement | null> {
  const load = () => get<{ schedules: ScheduleRecord[] }>(pathTo('schedules', {}, { workflow, next: 5, runs: 5 }));
  const { schedules } = await load();
  if (schedules.length === 0) return null;
  const section = h('section', { class: 'schedules', 'data-testid': 'schedules' });
  const render = (target: HTMLElement, list: ScheduleRecord[]) => {
    clear(target);
    target.append(h('h3', {}, 'Schedules'), ...list.map((s) => scheduleCard(s, act)));
  };
  async function act(s: ScheduleRecord, action: 'pause' | 'resume' | 'trigger'): Promise<void> {
    const what = { pause: 'Pause', resume: 'Resume', trigger: 'Run now' }[action];
    const why = {
      pause: 'No tick starts until it is resumed.',
      resume: 'It ticks again from now; the ticks missed while paused do not run.',
      trigger: 'A run starts now, outside the clock.',
    }[action];
    if (!(await confirmAction(`${what} ${s.workflow}/${s.name}?`, why, what))) return;
    try {
      await post(pathTo(action, { workflow: s.workflow, schedule: s.name }), {});
      toast(`${s.name}: ${action === 'trigger' ? 'a run started' : action === 'pause' ? 'paused' : 'resumed'}.`);
      // into whichever section is on the page: a reload of the view may have replaced this one meanwhile
      const shown = section.isConnected ? section : document.querySelector<HTMLElement>('[data-testid="schedules"]');
      if (shown) render(shown, (await load()).schedules);
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  }
  render(section, schedules);
  return section;
}

type Act = (s: ScheduleRecord, action: 'pause' | 'resume' | 'trigger') => Promise<void>;

function scheduleCard(s: ScheduleRecord, act: Act): HTMLElement {
  const clock = s.cron !== undefined ? `cron ${s.cron} (${s.timezone})` : `every ${humanDuration(s.every_ms ?? 0)}`;
  const policies = [
    `overlap ${s.overlap}`,
    s.catchup_ms > 0 ? `catchup ${humanDuration(s.catchup_ms)}` : null,
    s.jitter_ms > 0 ? `jitter ${humanDuration(s.jitter_ms)}` : null,
  ]
    .filter(Boolean)
    .join(' · ');
  return h(
    'article',
    { class: 'schedule', 'data-schedule': s.name },
    h('h4', {}, s.name, ' ', s.paused ? badge('paused') : null),
    h(
      'div',
      { class: 'actions', 'data-needs': roleFor('trigger') },
      h(
        'button',
        { type: 'button', 'data-testid': 'schedule-toggle', onclick: () => void act(s, s.paused ? 'resume' : 'pause') },
        s.paused ? 'Resume' : 'Pause',
      ),
      ' ',
      h('button', { type: 'button', 'data-testid': 'schedule-trigger', onclick: () => void act(s, 'trigger') }, 'Run now'),
    ),
    h('p', { class: 'mono' }, clock),
    h('p', { class: 'muted' }, policies),
    s.last_tick
      ? h(
          'p',
          {},
          `last tick ${time(s.last_tick)}: ${s.last_outcome ?? ''}${s.last_error ? ` (${s.last_error})` : ''}` +
            (s.last_lag_ms !== null && s.last_lag_ms >= 1000 ? ` — started ${Math.round(s.last_lag_ms / 1000)} s late` : ''),
        )
      : h('p', { class: 'muted' }, 'no tick yet'),
    s.missed_ticks > 0 &&
      h(
        'p',
        { class: 'warning', 'data-testid': 'schedule-missed' },
        `${s.missed_ticks} tick(s) missed, the last at ${time(s.missed_at ?? '')}: the leader fell behind and they left the catch-up window`,
      ),
    h(
      'table',
      { class: 'next-ticks' },
      h('tr', {}, h('th', {}, 'next tick (UTC)'), h('th', {}, `local (${s.timezone})`)),
      s.next_ticks.map((t) => h('tr', { 'data-tick': t.time }, h('td', { class: 'mono' }, time(t.time)), h('td', { class: 'mono' }, t.local))),
    ),
    s.recent_runs.length > 0
      ? h(
          'ul',
          { class: 'runs' },
          s.recent_runs.map((r) =>
            h('li', {}, h('a', { href: `/workflows/${encodeURIComponent(r.id)}`, 'data-link': true, class: 'mono' }, r.id), ' ', badge(r.state)),
          ),
        )
      : h('p', { class: 'muted' }, 'no runs yet'),
  );
}

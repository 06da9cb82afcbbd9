import { humanDuration, type ScheduleRecord } from '../../runtime/wire.js';
import { get } from './api.js';
import { badge, h, time } from './dom.js';

/** A workflow's deployed schedules: clock and policies, paused or not, the next ticks (UTC and local), the latest runs. */
export async function schedulesSection(workflow: string): Promise<HTMLElement | null> {
  const { schedules } = await get<{ schedules: ScheduleRecord[] }>(`/api/schedules?workflow=${encodeURIComponent(workflow)}&next=5&runs=5`);
  if (schedules.length === 0) return null;
  return h('section', { class: 'schedules', 'data-testid': 'schedules' }, h('h3', {}, 'Schedules'), schedules.map(scheduleCard));
}

function scheduleCard(s: ScheduleRecord): HTMLElement {
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
    h('p', { class: 'mono' }, clock),
    h('p', { class: 'muted' }, policies),
    s.last_tick
      ? h('p', {}, `last tick ${time(s.last_tick)}: ${s.last_outcome ?? ''}${s.last_error ? ` (${s.last_error})` : ''}`)
      : h('p', { class: 'muted' }, 'no tick yet'),
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

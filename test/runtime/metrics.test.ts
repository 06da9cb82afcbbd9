import { DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import parsePrometheus from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { serveMetrics } from '../../src/api/metrics-server.js';
import { startApiServer } from '../../src/api/server.js';
import { workflowCounts } from '../../src/runtime/sql/metrics.js';
import type { Logger } from '../../src/runtime/telemetry/log.js';
import { Metrics } from '../../src/runtime/telemetry/metrics.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { Arrivals } from '../helpers/arrivals.js';
import { advance, backend, drivenRuntime, final, settle, settled, testRuntime } from '../helpers/runtime.js';

const HOUR = 3_600_000;

const DEFS = {
  flaky: 'name: flaky\ntasks:\n  a: { kind: flaky, max_attempts: 2, retry: { backoff: constant, initial: 1ms, jitter: false } }\n',
  signalled: 'name: signalled\ntasks:\n  go: { kind: ok, wait: { terms: { ok: { signal: ok } } } }\n',
  timed: 'name: timed\ntasks:\n  go: { kind: ok, wait: { terms: { t: { timer: { after_wait_started: 1m } } } } }\n',
  stuck: 'name: stuck\ntasks:\n  a: { kind: nobody_runs_this }\n',
  lost: 'name: lost\ntasks:\n  a: { kind: hang }\n',
};

type Family = ReturnType<typeof parsePrometheus>[number];
const family = (families: Family[], name: string) => {
  const f = families.find((x) => x.name === name);
  if (!f) throw new Error(`no metric ${name} in the scrape`);
  return f;
};
const value = (f: Family, labels: Record<string, string> = {}) =>
  f.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)).reduce((n, m) => n + Number(m.value ?? 0), 0);
/**
 * A histogram's observations with these labels, from its `_count` lines (the parser reads counters and gauges,
 * but loses a histogram's labels when `le` comes first, as prom-client writes it).
 */
const observations = (text: string, name: string, labels: Record<string, string> = {}) =>
  [...text.matchAll(new RegExp(`^${name}_count\\{([^}]*)\\} (\\d+)$`, 'gm'))]
    .filter((m) => Object.entries(labels).every(([k, v]) => m[1].split(',').includes(`${k}="${v}"`)))
    .reduce((n, m) => n + Number(m[2]), 0);

/**
 * What moves every metric: a task retried, a signal wait, a timer wait, an attempt rescued from a worker that
 * stopped heartbeating, and a task no handler runs waiting in its queue.
 */
async function scenario(telemetry: { metrics?: Metrics; meterProvider?: MeterProvider }): Promise<void> {
  const clock = new VirtualClock(new Date());
  let calls = 0;
  const rt = await drivenRuntime({
    virtualClock: clock,
    ...telemetry,
    workerDeadAfterMs: 30_000,
    heartbeatIntervalMs: 3_600_000,
    definitions: DEFS,
    handlers: {
      flaky: async () => {
        if (++calls === 1) throw new Error('once');
        return {};
      },
      ok: async () => ({}),
      hang: () => clock.sleep(10 * HOUR).then(() => ({})),
    },
  });
  await rt.startWorker();
  const flaky = await rt.start('flaky');
  await final(rt, flaky);
  const signalled = await rt.start('signalled');
  await settle(rt);
  await rt.workflow(signalled).signals.emit('ok', {});
  await final(rt, signalled);
  const timed = await rt.start('timed');
  await settle(rt);
  await advance(rt, 60_000);
  await final(rt, timed);
  // an attempt whose worker stopped heartbeating is rescued by the leader's pass
  const lost = await rt.start('lost');
  await settled(rt, async () => (await rt.workflow(lost).task('a')).state === 'running');
  clock.advance(60_000);
  expect((await rt.maintenance()).rescued).toBe(1);
  // a task no handler here runs, waiting in its queue (started last: the driver runs what it can)
  await rt.start('stuck');
}

describe(`metrics as Prometheus text (${backend})`, () => {
  it('every metric braid names is present and moves with what the worker and the leader do', async () => {
    const metrics = new Metrics();
    await scenario({ metrics });
    const server = await serveMetrics(metrics, 0, '127.0.0.1');
    let text: string;
    try {
      const res = await fetch(server.url);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      text = await res.text();
      expect((await fetch(server.url.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await server.close();
    }
    const families = parsePrometheus(text);
    expect(value(family(families, 'braid_tasks_started_total'), { kind: 'flaky', queue: 'default' })).toBe(2);
    const ended = family(families, 'braid_tasks_ended_total');
    expect(value(ended, { kind: 'flaky', outcome: 'error' })).toBe(1);
    expect(value(ended, { kind: 'flaky', outcome: 'completed' })).toBe(1);
    expect(value(ended, { kind: 'ok', outcome: 'completed' })).toBe(2);
    for (const name of ['braid_attempt_duration_seconds', 'braid_wait_resolution_seconds', 'braid_signal_to_start_seconds', 'braid_timer_lateness_seconds'])
      expect(family(families, name).type).toBe('HISTOGRAM');
    expect(observations(text, 'braid_attempt_duration_seconds', { kind: 'ok' })).toBe(2);
    expect(observations(text, 'braid_attempt_duration_seconds', { kind: 'flaky', outcome: 'error' })).toBe(1);
    expect(observations(text, 'braid_wait_resolution_seconds', { kind: 'ok' })).toBe(2);
    expect(observations(text, 'braid_signal_to_start_seconds', { kind: 'ok' })).toBe(1);
    expect(observations(text, 'braid_timer_lateness_seconds', { kind: 'ok' })).toBe(1);
    expect(value(family(families, 'braid_rescues_total'))).toBe(1);
    expect(family(families, 'braid_leader_changes_total').type).toBe('COUNTER');
    // what the database holds, read when scraped: the task nobody runs waits in its queue
    expect(value(family(families, 'braid_queue_depth'), { queue: 'default' })).toBeGreaterThanOrEqual(1);
    expect(value(family(families, 'braid_queue_oldest_age_seconds'), { queue: 'default' })).toBeGreaterThanOrEqual(0);
    const workflows = family(families, 'braid_workflows');
    expect(value(workflows, { name: 'flaky', state: 'completed' })).toBe(1);
    expect(value(workflows, { name: 'stuck', state: 'running' })).toBe(1);
    // no label carries an id
    for (const f of families) for (const m of f.metrics) for (const v of Object.values(m.labels ?? {})) expect(v).not.toMatch(/^[0-9A-Z]{26}$/);
  });

  it('every queue a worker serves is exported, at 0 when nothing waits in it (an alert on an absent series never fires)', async () => {
    const metrics = new Metrics();
    const rt = await drivenRuntime({ metrics, queues: { default: 2, email: 1 } });
    await rt.startWorker();
    const families = parsePrometheus(await metrics.text());
    expect(value(family(families, 'braid_queue_depth'), { queue: 'email' })).toBe(0);
    expect(value(family(families, 'braid_queue_oldest_age_seconds'), { queue: 'email' })).toBe(0);
    expect(value(family(families, 'braid_queue_depth'), { queue: 'default' })).toBe(0);
  });

  it('braid_workflows past its exact-count size: running ones counted, finished ones from the statistics over (name, state), no full scan', async () => {
    const rt = await drivenRuntime({
      handlers: { ok: async () => null },
      definitions: {
        short: 'name: short\ntasks:\n  a: { kind: ok }\n',
        held: 'name: held\ntasks:\n  a: { kind: ok, wait: { terms: { go: { signal: go } } } }\n',
      },
    });
    await rt.startWorker();
    for (let i = 0; i < 5; i++) await final(rt, await rt.start('short'));
    for (let i = 0; i < 3; i++) await rt.start('held');
    await rt.workflow(await rt.start('held')).cancel();
    const s = `"${rt.schema}"`;
    await rt.db.query(`ANALYZE ${s}.workflows`);
    const sorted = (rows: { name: string; state: string; n: number }[]) =>
      [...rows].sort((a, b) => `${a.name} ${a.state}`.localeCompare(`${b.name} ${b.state}`));
    const exact = sorted(await workflowCounts(rt.db, s, Number.POSITIVE_INFINITY));
    expect(exact).toEqual([
      { name: 'held', state: 'cancelled', n: 1 },
      { name: 'held', state: 'running', n: 3 },
      { name: 'short', state: 'completed', n: 5 },
    ]);
    // a table this small is sampled whole: the estimate is the count
    expect(sorted(await workflowCounts(rt.db, s, 0))).toEqual(exact);
  });

  it('a process that becomes the leader counts it; braid ui serves /metrics behind its token', async () => {
    const metrics = new Metrics();
    // the process says when it leads
    const said = new Arrivals<string>();
    const logger: Logger = { info: (m) => said.push(m), warn: () => undefined, taskDone: () => undefined };
    // a lease a busy machine cannot miss renewing, so it is won once
    const rt = await testRuntime({ metrics, logger, leader: true, leaderLeaseMs: 30_000 });
    await rt.startWorker();
    await said.when((all) => all.some((l) => l.includes('is the leader')), 30_000);
    expect(rt.isLeader).toBe(true);
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1', metrics });
    try {
      expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
      const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer tok-tok-tok-tok-1' } })).text();
      expect(value(family(parsePrometheus(text), 'braid_leader_changes_total'))).toBe(1);
    } finally {
      await server.close();
      await rt.stop();
    }
  });

  it('the same metrics go to an OpenTelemetry meter provider, with no Metrics of the application', async () => {
    class Reader extends MetricReader {
      protected override async onForceFlush(): Promise<void> {}
      protected override async onShutdown(): Promise<void> {}
    }
    const reader = new Reader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    await scenario({ meterProvider });
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    const all = resourceMetrics.scopeMetrics.filter((m) => m.scope.name === 'braid').flatMap((m) => m.metrics);
    const metric = (name: string) => {
      const m = all.find((x) => x.descriptor.name === name);
      if (!m) throw new Error(`no metric ${name} collected`);
      return m;
    };
    const sum = (name: string, labels: Record<string, string> = {}) =>
      metric(name)
        .dataPoints.filter((p) => Object.entries(labels).every(([k, v]) => p.attributes[k] === v))
        .reduce((n, p) => n + (typeof p.value === 'number' ? p.value : (p.value as { count: number }).count), 0);
    expect(sum('braid_tasks_started_total', { kind: 'flaky', queue: 'default' })).toBe(2);
    expect(sum('braid_tasks_ended_total', { kind: 'flaky', outcome: 'error' })).toBe(1);
    expect(sum('braid_tasks_ended_total', { kind: 'ok', outcome: 'completed' })).toBe(2);
    for (const name of ['braid_attempt_duration_seconds', 'braid_wait_resolution_seconds', 'braid_signal_to_start_seconds', 'braid_timer_lateness_seconds'])
      expect(metric(name).dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(sum('braid_attempt_duration_seconds', { kind: 'ok' })).toBe(2);
    expect(sum('braid_signal_to_start_seconds', { kind: 'ok' })).toBe(1);
    expect(sum('braid_timer_lateness_seconds', { kind: 'ok' })).toBe(1);
    expect(sum('braid_rescues_total')).toBe(1);
    expect(sum('braid_queue_depth', { queue: 'default' })).toBeGreaterThanOrEqual(1);
    expect(metric('braid_queue_oldest_age_seconds').dataPointType).toBe(DataPointType.GAUGE);
    expect(sum('braid_workflows', { name: 'flaky', state: 'completed' })).toBe(1);
    expect(sum('braid_workflows', { name: 'stuck', state: 'running' })).toBe(1);
    await meterProvider.shutdown();
  });
});

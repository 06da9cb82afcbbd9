/**
 * braid's metrics, per runtime process, in a registry of their own (prom-client; never the global one): what
 * its worker and leader did (counters, histograms), and what the database holds (queue depth, workflows by
 * state), read when scraped. The same names go to OpenTelemetry metrics too, when `@opentelemetry/api` is
 * installed and a meter provider given or registered. Labels are kinds, queues, outcomes, names and states —
 * never ids — so their number stays bounded.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queryable } from '../db/types.js';
import { pauseCounts, queueDepths, scheduleLateness, workflowCounts } from '../sql/metrics.js';
import { quoteIdent } from '../sql/schema.js';
import { type MeterProviderLike, otelApi, otelMetricsActive } from './otel-api.js';

type Labels<L extends string> = Partial<Record<L, string>>;
type OtelMeter = import('@opentelemetry/api').Meter;

/** A counter kept in Prometheus text and, once attached, in an OpenTelemetry counter of the same name. */
class Count<L extends string> {
  otel?: { add(n: number, attributes?: Labels<L>): void };
  constructor(readonly prom: Counter<L>) {}
  inc(labels: Labels<L> = {}, n = 1): void {
    this.prom.inc(labels, n);
    this.otel?.add(n, labels);
  }
}

/** A histogram kept in both, as above. */
class Timing<L extends string> {
  otel?: { record(value: number, attributes?: Labels<L>): void };
  constructor(
    readonly prom: Histogram<L>,
    readonly buckets: number[],
  ) {}
  observe(labels: Labels<L>, value: number): void {
    this.prom.observe(labels, value);
    this.otel?.record(value, labels);
  }
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const LONG = [0.1, 1, 10, 60, 300, 900, 3600, 4 * 3600, 86_400, 7 * 86_400];

export class Metrics {
  readonly registry = new Registry();
  readonly tasksStarted: Count<'kind' | 'queue'>;
  readonly tasksEnded: Count<'kind' | 'queue' | 'outcome'>;
  readonly attemptDuration: Timing<'kind' | 'queue' | 'outcome'>;
  readonly waitResolution: Timing<'kind'>;
  readonly signalToStart: Timing<'kind'>;
  readonly timerLateness: Timing<'kind'>;
  readonly rescues: Count<never>;
  readonly leaderChanges: Count<never>;
  /** The OpenTelemetry meter the metrics also go to, once attached. */
  private meter?: OtelMeter;

  /** Both queue gauges read one statement per scrape: kept for the scrape's second. */
  private queues?: { at: number; rows: Promise<{ queue: string; depth: number; oldest_age_s: number }[]> };

  /** The queues a worker of this process serves: each is exported, at 0 when nothing waits in it. */
  private readonly served = new Set<string>();

  /** Where the gauges read queue depth and workflow counts when scraped: the runtime's own unless given. */
  private source?: { db: Queryable; s: string };

  constructor(db?: Queryable, schema = 'braid', options: { meterProvider?: MeterProviderLike } = {}) {
    if (db) this.bind(db, schema);
    const registers = [this.registry];
    const source = () => this.bound();
    const queueRows = () => this.queueRows();
    this.tasksStarted = new Count(
      new Counter({ name: 'braid_tasks_started_total', help: 'Task attempts started by this process.', labelNames: ['kind', 'queue'], registers }),
    );
    this.tasksEnded = new Count(
      new Counter({
        name: 'braid_tasks_ended_total',
        help: 'Task attempts ended by this process, by outcome (completed, error, timeout, cancel, snooze, release, output, lost).',
        labelNames: ['kind', 'queue', 'outcome'],
        registers,
      }),
    );
    this.attemptDuration = new Timing(
      new Histogram({
        name: 'braid_attempt_duration_seconds',
        help: 'How long task attempts ran, from the handler call to its end.',
        labelNames: ['kind', 'queue', 'outcome'],
        buckets: SECONDS,
        registers,
      }),
      SECONDS,
    );
    this.waitResolution = new Timing(
      new Histogram({
        name: 'braid_wait_resolution_seconds',
        help: 'From a wait becoming active to its resolution, for the first attempt of each task with a wait.',
        labelNames: ['kind'],
        buckets: LONG,
        registers,
      }),
      LONG,
    );
    this.signalToStart = new Timing(
      new Histogram({
        name: 'braid_signal_to_start_seconds',
        help: 'From the last signal that counted toward a resolved wait to its handler starting.',
        labelNames: ['kind'],
        buckets: SECONDS,
        registers,
      }),
      SECONDS,
    );
    this.timerLateness = new Timing(
      new Histogram({
        name: 'braid_timer_lateness_seconds',
        help: 'How late a timer that resolved a wait was seen, after its fire time.',
        labelNames: ['kind'],
        buckets: SECONDS,
        registers,
      }),
      SECONDS,
    );
    this.rescues = new Count(new Counter({ name: 'braid_rescues_total', help: 'Attempts this process rescued as leader from dead workers.', registers }));
    this.leaderChanges = new Count(new Counter({ name: 'braid_leader_changes_total', help: 'Times this process became the leader.', registers }));
    for (const gauge of GAUGES) {
      new Gauge({
        name: gauge.name,
        help: gauge.help,
        labelNames: gauge.labels,
        registers,
        async collect() {
          this.reset();
          for (const [labels, value] of await gauge.read(source(), queueRows)) this.set(labels, value);
        },
      });
    }
    this.attach(options.meterProvider);
  }

  /**
   * Sends the metrics to OpenTelemetry too (the provider given, else the registered one), once: the counters
   * and histograms as they are recorded, the gauges read from the database when the SDK collects.
   */
  attach(provider?: MeterProviderLike): void {
    if (this.meter || !otelMetricsActive(provider)) return;
    const api = otelApi()!;
    const meter = (provider ?? api.metrics.getMeterProvider()).getMeter('braid') as OtelMeter;
    this.meter = meter;
    for (const c of [this.tasksStarted, this.tasksEnded, this.rescues, this.leaderChanges] as Count<string>[]) {
      const { name, help } = c.prom as unknown as { name: string; help: string };
      c.otel = meter.createCounter(name, { description: help });
    }
    for (const t of [this.attemptDuration, this.waitResolution, this.signalToStart, this.timerLateness] as Timing<string>[]) {
      const { name, help } = t.prom as unknown as { name: string; help: string };
      t.otel = meter.createHistogram(name, { description: help, unit: 's', advice: { explicitBucketBoundaries: t.buckets } });
    }
    for (const gauge of GAUGES) {
      meter.createObservableGauge(gauge.name, { description: gauge.help }).addCallback(async (result) => {
        for (const [labels, value] of await gauge.read(this.bound(), () => this.queueRows())) result.observe(value, labels);
      });
    }
  }

  /** Reads the database's side from `db` and braid's `schema` (a runtime given these metrics binds them, unless bound). */
  bind(db: Queryable, schema: string): void {
    this.source ??= { db, s: quoteIdent(schema) };
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Where the gauges read, once a runtime (or the constructor) bound them. */
  private bound(): { db: Queryable; s: string } {
    if (!this.source) throw new Error('these metrics belong to no runtime yet: pass them to createRuntime({ metrics })');
    return this.source;
  }

  /** Exports these queues whether or not anything waits in them (an alert on a series that is absent never fires). */
  serveQueues(queues: Iterable<string>): void {
    for (const q of queues) this.served.add(q);
  }

  private queueRows(): Promise<{ queue: string; depth: number; oldest_age_s: number }[]> {
    if (this.queues && Date.now() - this.queues.at < 1000) return this.queues.rows;
    let rows: Promise<{ queue: string; depth: number; oldest_age_s: number }[]>;
    try {
      const { db, s } = this.bound();
      rows = queueDepths(db, s).then((found) => {
        const seen = new Set(found.map((r) => r.queue));
        return [...found, ...[...this.served].filter((q) => !seen.has(q)).map((queue) => ({ queue, depth: 0, oldest_age_s: 0 }))];
      });
    } catch (error) {
      return Promise.reject(error);
    }
    this.queues = { at: Date.now(), rows };
    return rows;
  }
}

type QueueRow = { queue: string; depth: number; oldest_age_s: number };

/** The gauges read from the database when scraped or collected: each a list of (labels, value). */
const GAUGES: {
  name: string;
  help: string;
  labels: string[];
  read(source: { db: Queryable; s: string }, queueRows: () => Promise<QueueRow[]>): Promise<[Record<string, string>, number][]>;
}[] = [
  {
    name: 'braid_queue_depth',
    help: 'Tasks available to run now, per queue (read when scraped).',
    labels: ['queue'],
    read: async (_source, queueRows) => (await queueRows()).map((r) => [{ queue: r.queue }, r.depth]),
  },
  {
    name: 'braid_queue_oldest_age_seconds',
    help: 'How long the oldest available task of each queue has been due (read when scraped).',
    labels: ['queue'],
    read: async (_source, queueRows) => (await queueRows()).map((r) => [{ queue: r.queue }, Math.max(0, r.oldest_age_s)]),
  },
  {
    name: 'braid_workflows',
    help: 'Workflows by name and state (read when scraped; past 100,000 workflows, finished ones estimated from Postgres statistics).',
    labels: ['name', 'state'],
    read: async ({ db, s }) => (await workflowCounts(db, s)).map((r) => [{ name: r.name, state: r.state }, r.n]),
  },
  {
    name: 'braid_paused',
    help: 'Pauses in force (braid pause) by scope: queue, kind, workflow (read when scraped).',
    labels: ['scope'],
    read: async ({ db, s }) => (await pauseCounts(db, s)).map((r) => [{ scope: r.scope }, r.n]),
  },
  {
    name: 'braid_schedule_missed_ticks',
    help: 'Schedule ticks the leader passed over, out of their catch-up window while it was behind (they never run; read when scraped).',
    labels: [],
    read: async ({ db, s }) => [[{}, (await scheduleLateness(db, s)).missed]],
  },
  {
    name: 'braid_schedule_lag_seconds',
    help: "The largest lag of a schedule's last tick: how long after its time it started (read when scraped).",
    labels: [],
    read: async ({ db, s }) => [[{}, (await scheduleLateness(db, s)).lag_s]],
  },
];

/**
 * braid's metrics, per runtime process, in a registry of their own (prom-client; never the global one): what
 * its worker and leader did (counters, histograms), and what the database holds (queue depth, workflows by
 * state), read when scraped. Labels are kinds, queues, outcomes, names and states — never ids — so their
 * number stays bounded.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queryable } from './db/types.js';
import { queueDepths, workflowCounts } from './sql/metrics.js';
import { quoteIdent } from './sql/schema.js';

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const LONG = [0.1, 1, 10, 60, 300, 900, 3600, 4 * 3600, 86_400, 7 * 86_400];

export class Metrics {
  readonly registry = new Registry();
  readonly tasksStarted: Counter<'kind' | 'queue'>;
  readonly tasksEnded: Counter<'kind' | 'queue' | 'outcome'>;
  readonly attemptDuration: Histogram<'kind' | 'queue' | 'outcome'>;
  readonly waitResolution: Histogram<'kind'>;
  readonly signalToStart: Histogram<'kind'>;
  readonly timerLateness: Histogram<'kind'>;
  readonly rescues: Counter;
  readonly leaderChanges: Counter;

  /** Both queue gauges read one statement per scrape: kept for the scrape's second. */
  private queues?: { at: number; rows: Promise<{ queue: string; depth: number; oldest_age_s: number }[]> };

  /** Where the gauges read queue depth and workflow counts when scraped: the runtime's own unless given. */
  private source?: { db: Queryable; s: string };

  constructor(db?: Queryable, schema = 'braid') {
    if (db) this.bind(db, schema);
    const registers = [this.registry];
    const source = () => this.bound();
    const queueRows = () => this.queueRows();
    this.tasksStarted = new Counter({
      name: 'braid_tasks_started_total',
      help: 'Task attempts started by this process.',
      labelNames: ['kind', 'queue'],
      registers,
    });
    this.tasksEnded = new Counter({
      name: 'braid_tasks_ended_total',
      help: 'Task attempts ended by this process, by outcome (completed, error, timeout, cancel, snooze, release, output, lost).',
      labelNames: ['kind', 'queue', 'outcome'],
      registers,
    });
    this.attemptDuration = new Histogram({
      name: 'braid_attempt_duration_seconds',
      help: 'How long task attempts ran, from the handler call to its end.',
      labelNames: ['kind', 'queue', 'outcome'],
      buckets: SECONDS,
      registers,
    });
    this.waitResolution = new Histogram({
      name: 'braid_wait_resolution_seconds',
      help: 'From a wait becoming active to its resolution, for the first attempt of each task with a wait.',
      labelNames: ['kind'],
      buckets: LONG,
      registers,
    });
    this.signalToStart = new Histogram({
      name: 'braid_signal_to_start_seconds',
      help: 'From the last signal that counted toward a resolved wait to its handler starting.',
      labelNames: ['kind'],
      buckets: SECONDS,
      registers,
    });
    this.timerLateness = new Histogram({
      name: 'braid_timer_lateness_seconds',
      help: 'How late a timer that resolved a wait was seen, after its fire time.',
      labelNames: ['kind'],
      buckets: SECONDS,
      registers,
    });
    this.rescues = new Counter({ name: 'braid_rescues_total', help: 'Attempts this process rescued as leader from dead workers.', registers });
    this.leaderChanges = new Counter({ name: 'braid_leader_changes_total', help: 'Times this process became the leader.', registers });
    new Gauge({
      name: 'braid_queue_depth',
      help: 'Tasks available to run now, per queue (read when scraped).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const r of await queueRows()) this.set({ queue: r.queue }, r.depth);
      },
    });
    new Gauge({
      name: 'braid_queue_oldest_age_seconds',
      help: 'How long the oldest available task of each queue has been due (read when scraped).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const r of await queueRows()) this.set({ queue: r.queue }, Math.max(0, r.oldest_age_s));
      },
    });
    new Gauge({
      name: 'braid_workflows',
      help: 'Workflows by name and state (read when scraped).',
      labelNames: ['name', 'state'],
      registers,
      async collect() {
        this.reset();
        const { db, s } = source();
        for (const r of await workflowCounts(db, s)) this.set({ name: r.name, state: r.state }, r.n);
      },
    });
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

  private queueRows(): Promise<{ queue: string; depth: number; oldest_age_s: number }[]> {
    if (this.queues && Date.now() - this.queues.at < 1000) return this.queues.rows;
    let rows: Promise<{ queue: string; depth: number; oldest_age_s: number }[]>;
    try {
      const { db, s } = this.bound();
      rows = queueDepths(db, s);
    } catch (error) {
      return Promise.reject(error);
    }
    this.queues = { at: Date.now(), rows };
    return rows;
  }
}

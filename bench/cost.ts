import { readFileSync } from 'node:fs';
import pg from 'pg';

/**
 * What a throughput window cost, beside its time: the client's CPU (this process), the CPU of the Postgres
 * backends that served the engine (their connections carry application_name BENCH_APP; read from /proc when
 * the server runs on this machine) and the round trips (ReadyForQuery messages the engine's connections
 * received). Divided per task these are steady on a busy machine, where time is not.
 */
export const BENCH_APP = 'braid-bench';

export interface Cost {
  ms: number;
  clientUs: number;
  /** null: the server's processes are not visible here (another machine or container). */
  serverUs: number | null;
  roundTrips: number | null;
}

let roundTrips = 0;
let counting = false;
// pg is one module for braid and graphile-worker here: its clients' ReadyForQuery handler sees every round trip
const clientProto = pg.Client.prototype as unknown as {
  _handleReadyForQuery?: (msg: unknown) => void;
  connectionParameters?: { application_name?: string };
};
const handleReady = clientProto._handleReadyForQuery;
if (typeof handleReady === 'function') {
  counting = true;
  clientProto._handleReadyForQuery = function (this: typeof clientProto, msg: unknown) {
    if (this.connectionParameters?.application_name?.startsWith(BENCH_APP)) roundTrips++;
    return handleReady.call(this, msg);
  };
}

/** The URL with the engine's application_name, for graphile-worker (braid takes it as an option). */
export function benchUrl(url: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', BENCH_APP);
  return u.toString();
}

/** Nanoseconds the process has run on a CPU (schedstat), or null when it is not a Postgres process of this machine. */
function cpuNs(pid: number): number | null {
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('postgres')) return null;
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return null;
  }
}

/**
 * A measuring window over `monitor` (a connection not named BENCH_APP): the engine's backends are found in
 * pg_stat_activity at its start, every 200 ms and at its end (a backend that opens and closes between two
 * looks is missed: pools keep theirs open for seconds).
 */
export async function costWindow(monitor: pg.Client): Promise<{ end: () => Promise<Cost> }> {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let local = true;
  const { rows: now } = await monitor.query<{ at: Date }>('SELECT clock_timestamp() AS at');
  const since = now[0].at;
  const sample = async () => {
    const { rows } = await monitor.query<{ pid: number; fresh: boolean }>(
      'SELECT pid, backend_start >= $2 AS fresh FROM pg_stat_activity WHERE application_name LIKE $1',
      [`${BENCH_APP}%`, since],
    );
    for (const { pid, fresh } of rows) {
      const ns = cpuNs(pid);
      if (ns === null) {
        local = false;
        continue;
      }
      // a backend opened during the window spent all its time on it (its start-up is the engine's cost too)
      if (!first.has(pid)) first.set(pid, fresh ? 0 : ns);
      last.set(pid, ns);
    }
  };
  await sample();
  let sampling: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(sample, () => undefined);
  }, 200);
  const rt0 = roundTrips;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return {
    async end() {
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const trips = roundTrips - rt0;
      clearInterval(timer);
      await sampling;
      await sample();
      let serverNs = 0;
      for (const [pid, ns] of last) serverNs += ns - (first.get(pid) ?? ns);
      return { ms, clientUs: cpu.user + cpu.system, serverUs: local && last.size > 0 ? serverNs / 1000 : null, roundTrips: counting ? trips : null };
    },
  };
}

export async function openMonitor(url: string): Promise<pg.Client> {
  const u = new URL(url);
  u.searchParams.set('application_name', 'bench-monitor');
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  return c;
}

"""python3 -m braid_worker --handlers MODULE[:NAME] [--dsn URL] [--queue Q] [--concurrency N] [--schema S]"""

import argparse
import importlib
import logging
import os
import sys

import psycopg

from .errors import ProtocolMismatch
from .worker import Worker


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m braid_worker", description="Runs braid tasks on Python handlers.")
    p.add_argument("--handlers", required=True, help="MODULE[:NAME]: a dict of kind -> handler (NAME defaults to HANDLERS)")
    p.add_argument("--dsn", default=os.environ.get("DATABASE_URL"), help="the Postgres URL (default: $DATABASE_URL)")
    p.add_argument("--queue", default="default")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--schema", default="braid")
    p.add_argument("--id", dest="worker_id")
    p.add_argument("--heartbeat-interval", type=float, default=2.0, help="seconds between heartbeats")
    p.add_argument("--dead-after", type=float, default=7.0, help="how long a write is retried before its attempt is left to braid's rescue (braid's worker_dead_after)")
    p.add_argument("--poll-interval", type=float, default=1.0)
    p.add_argument("--shutdown-grace", type=float, default=30.0)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    if not a.dsn:
        print("braid_worker: no database: give --dsn or set DATABASE_URL", file=sys.stderr)
        return 2
    module, _, name = a.handlers.partition(":")
    try:
        handlers = getattr(importlib.import_module(module), name or "HANDLERS")
    except (ImportError, AttributeError) as e:
        print(f"braid_worker: cannot load handlers {a.handlers}: {e}", file=sys.stderr)
        return 2
    try:
        Worker(a.dsn, handlers, queue=a.queue, concurrency=a.concurrency, schema=a.schema, worker_id=a.worker_id,
               heartbeat_interval=a.heartbeat_interval, dead_after=a.dead_after, poll_interval=a.poll_interval,
               shutdown_grace=a.shutdown_grace).run()
    except ProtocolMismatch as e:
        print(f"braid_worker: {e}", file=sys.stderr)
        return 3
    except psycopg.Error as e:
        # at start (later outages are retried): one line, no traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"braid_worker: cannot use the database: {first}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"braid_worker: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The worker: claims tasks of its kinds, runs their handlers on threads, and records how each attempt ended.

Every write is one call of braid's worker protocol (docs/protocol.md); a write that cannot reach the database
is tried again until `dead_after` has passed, then listed as abandoned in the heartbeats so braid's leader
rescues the attempt. A worker that dies mid-attempt stops heartbeating, and the leader rescues what it held.
"""

import json
import logging
import math
import os
import re
import select
import signal
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from .claims import Claimed, decode, decode_ranges
from .completer import Completer, Item
from .contract import problems, sealed
from .deadline import deadline, sever
from .errors import NonRetryableError, ProtocolMismatch, Snooze

PROTOCOL_REVISION = 1
DEFAULT_MAX_OUTPUT = 1024 * 1024

Handler = Callable[[Any, "Context"], Any]
Conn = psycopg.Connection[TupleRow]
log = logging.getLogger("braid_worker")


def _quote(schema: str) -> str:
    # as braid's own schema names: one SQL identifier, quoted
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema) is None:
        raise ValueError(f"invalid schema name: {schema!r}")
    return f'"{schema}"'


class Context:
    """What a handler is given beside its args: the attempt, its deps' outputs, a log, and a cancel flag."""

    def __init__(self, worker: "Worker", task: Claimed, deps: dict[str, Any]) -> None:
        self.workflow_id = task.workflow_id
        self.task = task.name
        self.attempt = task.attempt
        self.tid = task.tid
        self.max_attempts = task.max_attempts
        self.deps = deps
        self.wait = task.wait_evidence
        self.deadline = time.time() + task.timeout_ms / 1000 if task.timeout_ms else None
        self.cancelled = threading.Event()
        # set when braid cancelled the attempt (its workflow or the task): the attempt then ends cancelled
        self.cancel_reason: str | None = None
        self._worker = worker

    def log(self, message: str, level: str = "info", **fields: Any) -> None:
        """A line in the task's log (braid logs, the UI), stored at once."""
        if level not in ("debug", "info", "warn", "error"):
            raise ValueError(f"log level {level!r} is not one of debug, info, warn, error")
        line = {"workflow_id": self.workflow_id, "task": self.task, "attempt": self.attempt, "level": level,
                "source": "handler", "message": _storable(str(message)), "fields": fields or None}
        self._worker._write(lambda c: c.execute(f"SELECT {self._worker.s}.log(%s)", [Jsonb([line])]))


def _first(row: TupleRow | None) -> Any:
    return row[0] if row is not None else None


def _storable(text: str) -> str:
    # Postgres's jsonb holds no U+0000 and no lone surrogate: both written out as escapes
    return text.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")


class Worker:
    """Runs `handlers` (kind -> function(args, ctx) returning the output) for the tasks of `queue`."""

    def __init__(
        self,
        dsn: str,
        # Mapping[str, object]: the Handlers TypedDict `braid types --lang python` writes is one (callables checked here)
        handlers: Mapping[str, object],
        *,
        queue: str = "default",
        concurrency: int = 4,
        schema: str = "braid",
        worker_id: str | None = None,
        heartbeat_interval: float = 2.0,
        dead_after: float = 7.0,
        poll_interval: float = 1.0,
        shutdown_grace: float = 30.0,
        statement_timeout: float = 10.0,
        max_output: int = DEFAULT_MAX_OUTPUT,
    ) -> None:
        if not handlers:
            raise ValueError("a worker needs at least one handler")
        not_callable = sorted(kind for kind, fn in handlers.items() if not callable(fn))
        if not_callable:
            raise ValueError(f"the handlers of {', '.join(not_callable)} are not functions")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.dsn = dsn
        self.handlers: dict[str, Handler] = {kind: cast(Handler, fn) for kind, fn in handlers.items()}
        self.queue = queue
        self.concurrency = concurrency
        self.s = _quote(schema)
        self.schema = schema
        self.id = worker_id or f"py-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.heartbeat_interval = heartbeat_interval
        self.dead_after = dead_after
        self.poll_interval = poll_interval
        self.shutdown_grace = shutdown_grace
        self.statement_timeout_ms = int(statement_timeout * 1000)
        # the client's own bound on a call: the server's timeouts, and a margin for the round trip
        self.call_deadline = statement_timeout + 2.0
        self.max_output = max_output
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], Context] = {}
        self._claims: dict[str, int] = {}
        self._forget: list[int] = []
        self._abandoned: list[dict[str, Any]] = []
        self._local = threading.local()
        self._contracts: dict[tuple[str, str], dict[str, Any]] = {}
        self._completer: Completer  # started by run()
        self._beat_failing = False
        self._claim_failing = False
        self._stop_by: float | None = None
        self._claiming: Conn | None = None
        self._claim_unsure = False
        # a write failed after the stop's grace: the later ones give up at once
        self._unreachable_at_stop = False
        # where the last claim stopped in the queue's order (docs/protocol.md, "after"), and when one last began at its start
        self._after: Any = None
        self._from_start_at = 0.0

    # connections -------------------------------------------------------------------------------------------

    def _connect(self) -> Conn:
        # every statement has a deadline and a silent network is noticed: keepalives and a connect timeout (once
        # stopping, no longer than the stop's bound: libpq counts whole seconds, and takes 2 as its least)
        timeout = 10 if self._stop_by is None else max(2, min(10, math.ceil(self._call_deadline())))
        return psycopg.connect(
            self.dsn, autocommit=True, connect_timeout=timeout, keepalives=1, keepalives_idle=5, keepalives_interval=2,
            keepalives_count=3, options=f"-c statement_timeout={self.statement_timeout_ms} -c lock_timeout={self.statement_timeout_ms}",
            application_name=f"braid-worker-py {self.id}"[:63],
        )

    def _conn(self) -> Conn:
        c = getattr(self._local, "conn", None)
        if c is None or c.closed or c.broken:
            c = self._local.conn = self._connect()
        return c

    def _write(self, fn: Callable[[Conn], Any], give_up: Callable[[], None] | None = None) -> Any:
        """Runs one protocol call, reconnecting and trying again while the database cannot be reached."""
        first = time.monotonic()
        delay = 0.1
        while True:
            if self._unreachable_at_stop and self._stop_by is not None and time.monotonic() > self._stop_by:
                # past the stop's grace with the database already found silent: each write would wait out its own
                # connect; what is left is the leader's to rescue
                log.error("braid worker %s: giving up a write (the database did not answer during the stop)", self.id)
                if give_up:
                    give_up()
                return None
            try:
                c = self._conn()
                with deadline(c, self._call_deadline()):
                    return fn(c)
            # a connection lost mid-call can also surface as an InterfaceError (the connection closed under it)
            except (psycopg.OperationalError, psycopg.InterfaceError, psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable) as e:
                stopped = self._stop_by is not None and time.monotonic() > self._stop_by
                self._unreachable_at_stop = self._unreachable_at_stop or stopped
                if stopped or time.monotonic() - first > self.dead_after:
                    log.error("braid worker %s: giving up a write (%s): braid's leader rescues its attempt", self.id, str(e).strip())
                    if give_up:
                        give_up()
                    return None
                # the heartbeats say an outage once; each write's retries are not worth a line
                log.debug("braid worker %s: the database did not answer (%s); trying again", self.id, str(e).strip())
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _call_deadline(self) -> float:
        # once stopping, no call outlives the grace by more than a couple of seconds
        if self._stop_by is None:
            return self.call_deadline
        return max(0.5, min(self.call_deadline, self._stop_by + 2.0 - time.monotonic()))

    # lifecycle ---------------------------------------------------------------------------------------------

    def check_protocol(self, c: Conn) -> None:
        row = c.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = %s AND p.proname = 'protocol')", [self.schema]).fetchone()
        found = _first(c.execute(f"SELECT {self.s}.protocol()").fetchone()) if row and row[0] else None
        if found != PROTOCOL_REVISION:
            raise ProtocolMismatch(
                f"the database has no braid worker protocol in schema {self.schema} (run braid migrate)" if found is None else
                f"the database speaks braid worker protocol revision {found}, this worker revision {PROTOCOL_REVISION}: "
                + ("upgrade braid-worker" if found > PROTOCOL_REVISION else "run braid migrate with a braid that speaks it"))

    def run(self) -> None:
        """Runs until SIGTERM or SIGINT (or stop()): then finishes what runs, up to shutdown_grace."""
        c = self._conn()
        self.check_protocol(c)
        kinds = sorted(self.handlers)
        c.execute(f"SELECT {self.s}.register_worker(%s, %s, %s, %s, %s, now())",
                  [self.id, socket.gethostname(), os.getpid(), [self.queue], kinds])
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop())
            signal.signal(signal.SIGINT, lambda *_: self.stop())
        beat = threading.Thread(target=self._heartbeats, name="braid-heartbeat", daemon=True)
        beat.start()
        listener = threading.Thread(target=self._listen, name="braid-listen", daemon=True)
        listener.start()
        log.info("braid worker %s ready: queue %s, kinds %s, concurrency %d", self.id, self.queue, ", ".join(kinds), self.concurrency)
        self._completer = Completer(self._commit)
        # claims on a thread of their own: a stop never waits on a claim (or a connect) to a silent database
        claimer = threading.Thread(target=self._claim_loop, name="braid-claims", daemon=True)
        claimer.start()
        while not self._stopping.wait(0.5):
            pass
        claimer.join(max(0.0, (self._stop_by or 0.0) - time.monotonic()))
        self._shutdown()
        log.info("braid worker %s stopped", self.id)

    def _claim_loop(self) -> None:
        while not self._stopping.is_set():
            free = self.concurrency - len(self._running)
            claimed = self._claim(free) if free > 0 else []
            for task, ctx in claimed:
                if self._stopping.is_set():
                    # claimed as the stop came: given back at once, never started
                    self._attempt_released(task, ctx)
                    continue
                # daemon threads, one per attempt (slots bound them): a handler that never returns cannot hold the exit
                threading.Thread(target=self._attempt, args=(task, ctx), name=f"braid-task {task.name}", daemon=True).start()
            if not claimed or free - len(claimed) <= 0:
                self._wake.wait(self.poll_interval)
                self._wake.clear()

    def _attempt_released(self, task: Claimed, ctx: Context) -> None:
        try:
            self._end(ctx, "release", {"message": "the worker stopped before the attempt started", "kind": "shutdown"}, None)
        except psycopg.Error:
            self._abandon(ctx)
        finally:
            self._ended(task, ctx)

    def stop(self) -> None:
        """Stops claiming; the stop is bounded by shutdown_grace and 2 s from now, whatever the database does."""
        if self._stop_by is None:
            self._stop_by = time.monotonic() + self.shutdown_grace
        self._stopping.set()
        self._wake.set()
        # a claim waiting on a silent database ends now (a claim that committed unseen is rescued: the worker stops)
        claiming = self._claiming
        if claiming is not None:
            sever(claiming)

    def _shutdown(self) -> None:
        """Bounded by the grace and a few seconds: what cannot be recorded by then (the database silent) is left to
        braid's leader, which rescues the attempts of a worker that stopped heartbeating."""
        if self._stop_by is None:
            self._stop_by = time.monotonic() + self.shutdown_grace
        while self._running and time.monotonic() < self._stop_by:
            time.sleep(0.05)
        with self._lock:
            left = list(self._running.values())
        for ctx in left:
            # still running at the end of the grace: given back, to run again at once elsewhere
            ctx.cancelled.set()
            self._end(ctx, "release", {"message": "the worker shut down before the attempt ended", "kind": "shutdown"}, None)
        self._completer.close(timeout=max(0.0, self._stop_by + 2.0 - time.monotonic()))
        self._forget_claims()
        self._write(lambda c: c.execute(f"SELECT {self.s}.stop_worker(%s, now())", [self.id]))

    # claiming ----------------------------------------------------------------------------------------------

    def _claim(self, free: int) -> list[tuple[Claimed, Context]]:
        with self._lock:
            forget, self._forget = self._forget, []
        try:
            c = self._conn()
            if self._claim_unsure:
                # the last claim's reply never came: what it may have claimed unseen goes back
                with self._lock:
                    known = [int(k) for k in self._claims]
                with deadline(c, self.call_deadline):
                    c.execute(f"SELECT {self.s}.release_unknown_claims(%s, %s, now())", [self.id, known])
                self._claim_unsure = False
            self._claiming = c
            # from where the last claim stopped, and from the queue's start once a second (a task that became available
            # before that point waits at most that long in a queue too busy for claims to run short)
            after = self._after if self._after is not None and time.monotonic() - self._from_start_at < 1.0 else None
            if after is None:
                self._from_start_at = time.monotonic()
            try:
                with deadline(c, self.call_deadline):
                    # (ranged items as their running ranges: no row or JSON array made per item)
                    row = c.execute(f"SELECT tasks, claim, unplaced, after, ranges FROM {self.s}.claim(%s, %s, %s, %s, now(), %s, %s, NULL, %s, true)",
                                    [self.queue, sorted(self.handlers), free, self.id, forget, free,
                                     None if after is None else Jsonb(after)]).fetchone()
            finally:
                self._claiming = None
        except psycopg.Error as e:
            self._claim_unsure = True
            with self._lock:
                self._forget.extend(forget)
            # said once per outage, as the heartbeats say theirs
            if not self._claim_failing and not self._stopping.is_set():
                log.warning("braid worker %s: claiming failed (%s); trying again every %.1f s", self.id, str(e).strip(), self.poll_interval)
                self._claim_failing = True
            return []
        if self._claim_failing:
            log.warning("braid worker %s: claiming works again", self.id)
            self._claim_failing = False
        if row is None:
            return []
        tasks, claim, unplaced, self._after, ranges = row
        if unplaced:
            try:
                with deadline(c, self.call_deadline):
                    c.execute(f"SELECT {self.s}.flow_tag_waiting(%s, 5000)", [self.queue])
            except psycopg.Error:
                pass  # the next claim places them
        claimed = decode(tasks, claim) + decode_ranges(ranges, claim)
        # each attempt keeps its own context: a task claimed again (its earlier attempt rescued while its handler still
        # ran here) is another attempt, which the earlier one's end must not take out of the running set
        pairs = [(t, Context(self, t, {})) for t in claimed]
        with self._lock:
            if claim is not None and claimed:
                self._claims[claim] = len(claimed)
            for t, ctx in pairs:
                self._running[(t.workflow_id, t.name)] = ctx
        return pairs

    def _forget_claims(self) -> None:
        with self._lock:
            forget, self._forget = self._forget, []
        if forget:
            self._write(lambda c: c.execute(f"SELECT 1 FROM {self.s}.claim(%s, %s, 0, %s, now(), %s, 0)", [self.queue, [], self.id, forget]))

    def _listen(self) -> None:
        available, cancel = f"{self.schema}_available", f"{self.schema}_cancel"
        while not self._stopping.is_set():
            try:
                with self._connect() as c:
                    with deadline(c, self.call_deadline):
                        c.execute(f'LISTEN "{available}"')
                        c.execute(f'LISTEN "{cancel}"')
                        # cancels sent while not listening were missed: what runs is checked once
                        self._check_cancelled(c)
                    quiet_since = time.monotonic()
                    while not self._stopping.is_set():
                        ready, _, _ = select.select([c.fileno()], [], [], 1.0)
                        if not ready and time.monotonic() - quiet_since > 10:
                            # a silent connection may be a dead one: a ping under a deadline tells
                            with deadline(c, 5.0):
                                c.execute("SELECT 1")
                            quiet_since = time.monotonic()
                        if ready:
                            quiet_since = time.monotonic()
                            c.pgconn.consume_input()
                            while (n := c.pgconn.notifies()) is not None:
                                payload = n.extra.decode()
                                if n.relname.decode() == cancel:
                                    workflow, _, task = payload.partition(" ")
                                    self._cancel(workflow, task or None)
                                elif payload == self.queue:
                                    self._wake.set()
            except psycopg.Error:
                time.sleep(1.0)

    def _cancel(self, workflow: str, task: str | None) -> None:
        with self._lock:
            hit = [ctx for (w, name), ctx in self._running.items() if w == workflow and (task is None or name == task)]
        for ctx in hit:
            ctx.cancel_reason = "attempt cancelled" if task else "workflow cancelled"
            ctx.cancelled.set()

    def _check_cancelled(self, c: Conn) -> None:
        with self._lock:
            held = [{"workflow_id": w, "name": n} for (w, n) in self._running]
        if held:
            rows = c.execute(f"SELECT DISTINCT t.workflow_id FROM jsonb_to_recordset(%s) AS k(workflow_id text, name text) "
                             f"JOIN {self.s}.tasks t ON t.workflow_id = k.workflow_id AND t.name = k.name WHERE t.cancel_requested",
                             [Jsonb(held)]).fetchall()
            for (workflow,) in rows:
                self._cancel(workflow, None)

    # heartbeats --------------------------------------------------------------------------------------------

    def _heartbeats(self) -> None:
        conn: Conn | None = None
        while not self._stopping.wait(self.heartbeat_interval):
            with self._lock:
                abandoned = list(self._abandoned)
            try:
                if conn is None or conn.closed or conn.broken:
                    conn = self._connect()
                # a heartbeat that cannot commit well within dead-after is a failed one
                with deadline(conn, max(1.0, min(self.heartbeat_interval * 2, self.dead_after / 2))):
                    row = conn.execute(f"SELECT alive, abandoned FROM {self.s}.heartbeat(%s, now(), %s)",
                                       [self.id, Jsonb(abandoned) if abandoned else None]).fetchone()
                if self._beat_failing:
                    log.warning("braid worker %s: heartbeats reach the database again", self.id)
                    self._beat_failing = False
                if row is not None:
                    still = {(a["workflow_id"], a["name"], a["attempt"]) for a in (row[1] or [])}
                    with self._lock:
                        self._abandoned = [a for a in self._abandoned if (a["workflow_id"], a["name"], a["attempt"]) in still or a not in abandoned]
            except psycopg.Error as e:
                # said once: a worker that cannot heartbeat is taken for dead after dead_after, its attempts rescued
                if not self._beat_failing:
                    log.error("braid worker %s: heartbeat failed (%s); its tasks are rescued if this lasts %.0f s", self.id, str(e).strip(), self.dead_after)
                    self._beat_failing = True
                conn = None

    # attempts ----------------------------------------------------------------------------------------------

    def _attempt(self, task: Claimed, ctx: Context) -> None:
        try:
            self._execute(task, ctx)
        except Exception as e:  # the worker's own failure: the attempt fails, the worker goes on
            log.error("braid worker %s: task %s/%s: %s", self.id, task.workflow_id, task.name, e)
            try:
                self._end(ctx, "error", {"message": _storable(f"the Python worker failed: {e}"), "kind": "error"}, None)
            except Exception:
                # its end cannot be recorded: listed with the heartbeats, so braid's leader rescues it
                self._abandon(ctx)
        finally:
            self._ended(task, ctx)

    def _ended(self, task: Claimed, ctx: Context) -> None:
        with self._lock:
            key = (task.workflow_id, task.name)
            if self._running.get(key) is ctx:
                del self._running[key]
            if task.claim is not None:
                self._claims[task.claim] -= 1
                if self._claims[task.claim] == 0:
                    del self._claims[task.claim]
                    self._forget.append(int(task.claim))
        self._wake.set()

    def _execute(self, task: Claimed, ctx: Context) -> None:
        if task.flow_error:
            self._end(ctx, "error", {"message": task.flow_error, "kind": "error", "code": "flow_invalid", "no_retry": True}, None)
            return
        if task.start is not None:
            # a start task starts child workflows from CEL templates: braid's TypeScript runtime runs it
            self._end(ctx, "error", {"message": f"task {task.name} starts workflows, which needs braid's CEL: serve kind {task.kind} "
                                     "from a braid TypeScript worker", "kind": "error", "code": "worker_unsupported", "no_retry": True}, None)
            return
        if isinstance(task.deferred, dict) and not task.deferred.get("rendered"):
            # args that read deps through templates: braid's leader renders them, then offers the task again
            self._end(ctx, "render", None, None)
            return
        deps = dict(task.dep_outputs)
        if task.large_deps:
            deps.update(self._write(lambda c: _first(c.execute(f"SELECT {self.s}.dep_outputs(%s, %s)", [task.workflow_id, task.large_deps]).fetchone())) or {})
        ctx.deps = deps
        contract = self._contract(task)
        if contract.get("sensitive") or sealed(task.args) or sealed(deps):
            # sealed values need braid's keys and ciphers, which live in its TypeScript runtime
            self._end(ctx, "error", {"message": f"task {task.name} reads or returns sensitive values, which this worker cannot open or seal: "
                                     f"serve kind {task.kind} from a braid TypeScript worker", "kind": "error", "code": "worker_unsupported",
                                     "no_retry": True}, None)
            return
        handler = self.handlers.get(task.kind)
        if handler is None:
            self._end(ctx, "release", {"message": f"no handler for kind {task.kind}", "kind": "error"}, None)
            return
        result: dict[str, Any] = {}
        run: Handler = handler

        def call() -> None:
            try:
                result["output"] = run(task.args, ctx)
            except BaseException as e:
                result["error"] = e

        runner = threading.Thread(target=call, name=f"braid-handler {task.name}", daemon=True)
        runner.start()
        deadline = time.monotonic() + task.timeout_ms / 1000 if task.timeout_ms else None
        # a cancel ends the attempt at once, as a timeout does; the handler is told through ctx.cancelled
        while runner.is_alive() and ctx.cancel_reason is None and (deadline is None or time.monotonic() < deadline):
            runner.join(0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic())))
        if ctx.cancel_reason is not None:
            self._end(ctx, "cancel", {"message": ctx.cancel_reason, "kind": "cancel"}, None)
            return
        if runner.is_alive():
            ctx.cancelled.set()
            self._end(ctx, "error", {"message": f"the attempt timed out after {task.timeout_ms} ms", "kind": "timeout", "code": "timeout"}, None)
            return
        error = result.get("error")
        if error is None:
            self._complete(ctx, result.get("output"), contract)
        elif isinstance(error, Snooze):
            self._end(ctx, "snooze", None, int(error.seconds * 1000))
        else:
            entry: dict[str, Any] = {"message": _storable(str(error) or type(error).__name__), "name": type(error).__name__, "kind": "error",
                                     "stack": _storable("".join(traceback.format_exception(error))[-4000:])}
            code = getattr(error, "code", None)
            if isinstance(code, str):
                entry["code"] = code
            if isinstance(error, NonRetryableError):
                entry["no_retry"] = True
            self._end(ctx, "error", entry, None)

    def _contract(self, task: Claimed) -> dict[str, Any]:
        """The task's returns, max_output and sensitivity, read once per workflow and task template."""
        key = (task.workflow_id, task.template)
        with self._lock:
            known = self._contracts.get(key)
        if known is not None:
            return known
        found = self._write(lambda c: _first(c.execute(f"SELECT {self.s}.task_contract(%s, %s)", [task.workflow_id, task.template]).fetchone()))
        contract: dict[str, Any] = found if isinstance(found, dict) else {}
        with self._lock:
            if len(self._contracts) >= 10_000:
                self._contracts.clear()
            self._contracts[key] = contract
        return contract

    def _complete(self, ctx: Context, output: Any, contract: dict[str, Any]) -> None:
        try:
            text = json.dumps(output, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            self._end(ctx, "error", {"message": f"the output is not JSON: {e}", "kind": "output", "code": "output_invalid"}, None)
            return
        if "\\u0000" in text:
            self._end(ctx, "error", {"message": "the output holds U+0000, which braid cannot store", "kind": "output", "code": "output_invalid"}, None)
            return
        try:
            size = len(text.encode())
        except UnicodeEncodeError:
            self._end(ctx, "error", {"message": "the output holds a lone surrogate, which is not text braid can store", "kind": "output",
                                     "code": "output_invalid"}, None)
            return
        limit = contract.get("max_output") or self.max_output
        if size > limit:
            self._end(ctx, "error", {"message": f"task \"{ctx.task}\": its output is {size} bytes of JSON, over its max_output of {limit} bytes",
                                     "kind": "output", "code": "output_too_large"}, None)
            return
        wrong = problems(contract["returns"], output) if contract.get("returns") is not None else []
        if wrong:
            self._end(ctx, "error", {"message": f"task \"{ctx.task}\": its output does not match its returns: {'; '.join(wrong)}",
                                     "kind": "output", "code": "output_invalid"}, None)
            return
        self._completer.complete(ctx.workflow_id, ctx.task, ctx.attempt, ctx.tid, output)

    def _commit(self, items: list[Item]) -> None:
        """complete() for a batch of outputs: first by the claims' addresses (an item of a running range is completed
        there), then by key those the first call skipped (their row moved since, or their range was given rows); an
        attempt no longer running is skipped by both: nothing to do."""

        def call(batch: list[Item], by_tid: bool) -> set[tuple[str, str]]:
            groups: dict[str, list[list[Any]]] = {}
            for workflow_id, task, attempt, tid, output in batch:
                groups.setdefault(workflow_id, []).append([task, attempt, tid if by_tid else None, output])
            attempts = [{"workflow_id": w, "worker_id": self.id, "attempts": a} for w, a in groups.items()]
            skipped: set[tuple[str, str]] = set()

            def run(c: Conn) -> None:
                row = c.execute(f"SELECT skipped FROM {self.s}.complete(%s, now(), %s, NULL, '[]', '{{}}', NULL, %s, false)",
                                [Jsonb(attempts), list(groups), by_tid]).fetchone()
                for s in _first(row) or []:
                    skipped.add((s["w"], s["n"]))

            self._write(run, give_up=lambda: give_up(batch))
            return skipped

        def give_up(batch: list[Item]) -> None:
            for workflow_id, task, attempt, _, _ in batch:
                self._abandon_ref(workflow_id, task, attempt)

        by_tid = all(tid is not None for _, _, _, tid, _ in items)
        skipped = call(items, by_tid)
        if by_tid and skipped:
            call([i for i in items if (i[0], i[1]) in skipped], False)

    def _end(self, ctx: Context, outcome: str, error: dict[str, Any] | None, snooze_ms: int | None) -> None:
        self._write(
            lambda c: c.execute(f"SELECT {self.s}.end_attempt(%s, %s, %s, %s, %s, %s, %s, now(), false)",
                                [ctx.workflow_id, ctx.task, ctx.attempt, self.id, outcome, Jsonb(error) if error else None, snooze_ms]),
            give_up=lambda: self._abandon(ctx))

    def _abandon(self, ctx: Context) -> None:
        self._abandon_ref(ctx.workflow_id, ctx.task, ctx.attempt)

    def _abandon_ref(self, workflow_id: str, task: str, attempt: int) -> None:
        with self._lock:
            self._abandoned.append({"workflow_id": workflow_id, "name": task, "attempt": attempt})

"""Completions in batches: each attempt's output waits for the next complete() call, which records every output
gathered meanwhile in one statement (a workflow's completions serialise on its lock: one call for many is what
lets a wide fan-out keep up)."""

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

MAX_BATCH = 500

# A batch of [workflow_id, task, attempt, claim address, output] as one complete() call; raises what the call raised
Item = tuple[str, str, int, str | None, Any]
Commit = Callable[[list[Item]], None]


class Completer:
    def __init__(self, commit: Commit) -> None:
        self._commit = commit
        self._queue: queue.Queue[tuple[Item, Future[None]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="braid-completer", daemon=True)
        self._thread.start()

    def complete(self, workflow_id: str, task: str, attempt: int, tid: str | None, output: Any) -> None:
        """Returns once the output is recorded (or the attempt no longer ran); raises what recording it raised."""
        done: Future[None] = Future()
        self._queue.put(((workflow_id, task, attempt, tid, output), done))
        done.result()

    def close(self, timeout: float | None = None) -> None:
        """Records what is queued, then stops; gives up waiting after `timeout` (the thread is a daemon)."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            closing = False
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    closing = True
                    break
                batch.append(item)
            self._flush(batch)
            if closing:
                return

    def _flush(self, batch: list[tuple[Item, Future[None]]]) -> None:
        try:
            self._commit([item for item, _ in batch])
        except Exception as e:
            # one output may be at fault (data the database refuses): each alone, so only that one fails
            if len(batch) == 1:
                batch[0][1].set_exception(e)
                return
            for item, done in batch:
                try:
                    self._commit([item])
                    done.set_result(None)
                except Exception as e:
                    done.set_exception(e)
            return
        for _, done in batch:
            done.set_result(None)


"""The conformance suite's handlers for the Python worker (conformance/README.md; handlers.mjs is the same in TypeScript)."""

import time
from typing import Any

from braid_worker import Context, NonRetryableError, Snooze

_snoozed: set[tuple[str, str]] = set()


class Flaky(Exception):
    code = "flaky"


def echo(args: Any, ctx: Context) -> Any:
    return {"args": args, "deps": ctx.deps}


def flaky(args: Any, ctx: Context) -> Any:
    if ctx.attempt < args["succeed_on"]:
        raise Flaky(f"attempt {ctx.attempt} fails")
    return {"attempt": ctx.attempt}


def refuse(args: Any, ctx: Context) -> Any:
    raise NonRetryableError(f"refused: {args['code']}", code=args["code"])


def snooze_once(args: Any, ctx: Context) -> Any:
    key = (ctx.workflow_id, ctx.task)
    if key not in _snoozed:
        _snoozed.add(key)
        raise Snooze(args["ms"] / 1000)
    return {"attempt": ctx.attempt}


def hang_first(args: Any, ctx: Context) -> Any:
    if ctx.attempt == 1:
        ctx.cancelled.wait(args["ms"] / 1000)
    return {"attempt": ctx.attempt}


def sleep(args: Any, ctx: Context) -> Any:
    ctx.cancelled.wait(args["ms"] / 1000)
    return {"slept": args["ms"], "attempt": ctx.attempt}


def big(args: Any, ctx: Context) -> Any:
    return {"text": "x" * args["bytes"]}


def logs(args: Any, ctx: Context) -> Any:
    for n, line in enumerate(args["lines"]):
        ctx.log(line, n=n)
    return {"logged": len(args["lines"])}


HANDLERS = {"echo": echo, "flaky": flaky, "refuse": refuse, "snooze_once": snooze_once, "hang_first": hang_first, "sleep": sleep, "logs": logs, "big": big}

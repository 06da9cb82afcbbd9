"""A claimed task as braid's claim() returns it: a JSON array whose fields come in the protocol's order."""

from dataclasses import dataclass
from typing import Any

# docs/protocol.md, "claim": the order of a claimed task's fields
FIELDS = (
    "workflow_id", "name", "template", "kind", "queue", "attempt", "max_attempts", "args", "deps", "dependents",
    "dependents_wait", "timeout_ms", "start", "tid", "dep_outputs", "deferred", "wait_evidence", "flow_error",
)


@dataclass
class Claimed:
    workflow_id: str
    name: str
    template: str
    kind: str
    queue: str
    attempt: int
    max_attempts: int
    args: Any
    deps: list[str]
    timeout_ms: int | None
    dep_outputs: dict[str, Any]
    large_deps: list[str]
    deferred: Any
    start: Any
    wait_evidence: Any
    flow_error: str | None
    claim: str | None
    # where the claim found it (a row's address, or an item's in its running range): its completion is looked up there
    tid: str | None = None


def decode(rows: list[list[Any]] | None, claim: str | None) -> list[Claimed]:
    tasks = []
    for row in rows or []:
        f = dict(zip(FIELDS, row))
        pair = f["dep_outputs"] or [None, None]
        tasks.append(
            Claimed(
                workflow_id=f["workflow_id"], name=f["name"], template=f["template"], kind=f["kind"], queue=f["queue"], attempt=f["attempt"],
                max_attempts=f["max_attempts"], args=f["args"], deps=f["deps"] or [], timeout_ms=f["timeout_ms"],
                dep_outputs=pair[0] or {}, large_deps=pair[1] or [], deferred=f["deferred"], start=f["start"],
                wait_evidence=f["wait_evidence"], flow_error=f["flow_error"], claim=claim, tid=f["tid"],
            )
        )
    return tasks


# docs/protocol.md, "claim" with ranges: the order of a running range's fields
RANGE_FIELDS = ("workflow_id", "template", "lo", "hi", "kind", "queue", "attempt", "max_attempts", "timeout_ms", "args")


def decode_ranges(ranges: list[list[Any]] | None, claim: str | None) -> list[Claimed]:
    """The items of a claim's running ranges, each as the claimed task the claim would have listed one by one."""
    tasks = []
    for entry in ranges or []:
        r = dict(zip(RANGE_FIELDS, entry))
        lo, template = r["lo"], r["template"]
        for i in range(lo, r["hi"]):
            tasks.append(
                Claimed(
                    workflow_id=r["workflow_id"], name=f"{template}[{i}]", template=template, kind=r["kind"], queue=r["queue"],
                    attempt=r["attempt"], max_attempts=r["max_attempts"], args=r["args"][i - lo], deps=[], timeout_ms=r["timeout_ms"],
                    dep_outputs={}, large_deps=[], deferred=None, start=None, wait_evidence=None, flow_error=None, claim=claim,
                    tid=f"r{lo}:{i}",
                )
            )
    return tasks

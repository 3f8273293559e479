"""``placement-solution/1`` documents, read and written losslessly."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from placement.errors import SolutionFormatError
from placement.formats.parse import describe, flagged_paths, read_json_file, schema_problems, write_json_atomic
from placement.model.records import Instance, JobReport, Solution, Status

__all__ = ["SOLUTION_FORMAT", "solution_to_dict", "solution_from_dict", "load_solution", "dump_solution"]

SOLUTION_FORMAT = "placement-solution/1"
GIVEN_METHOD = "given"
"""The ``method`` of a solution file that names none (a placement written by hand)."""


# ------------------------------------------------------------------ solutions
def solution_to_dict(sol: Solution) -> dict[str, Any]:
    return {
        "format": SOLUTION_FORMAT,
        "instance": sol.instance,
        "method": sol.method,
        "status": sol.status.value,
        "objective": sol.objective,
        "bound": sol.bound,
        "assignment": {j: dict(a) for j, a in sol.assignment.items()},
        **({"shards": {j: dict(a) for j, a in sol.shards.items()}} if sol.shards else {}),
        **({"stages": {j: [list(row) for row in m] for j, m in sol.stages.items()}} if sol.stages else {}),
        **({"gpus": {j: {s: list(g) for s, g in a.items()} for j, a in sol.gpus.items()}} if sol.gpus else {}),
        "unplaced": list(sol.unplaced),
        "jobs": {
            j: {
                "expected_iteration_ms": r.expected_iteration_ms,
                "ideal_iteration_ms": r.ideal_iteration_ms,
                "straggler_probability": r.straggler_probability,
                "bandwidth_gbps": r.bandwidth_gbps,
                "servers": r.servers,
            }
            for j, r in sol.jobs.items()
        },
        "stats": dict(sol.stats),
    }


def solution_from_dict(
    data: Any, instance: Instance | None = None, *, source: str | None = None, _pre: Sequence[str] = ()
) -> Solution:
    """Check and build a :class:`Solution`; with ``instance``, its ids are checked too
    (capacity and the other constraints are the validator's business).  Only ``format`` and
    ``assignment`` (and ``shards``/``stages`` where they apply) are required: the rest are
    outputs that readers recompute.  A missing ``unplaced`` is the instance's jobs not in
    ``assignment`` (empty without ``instance``), ``status`` is ``feasible``, ``method``
    :data:`GIVEN_METHOD`, ``instance`` the instance's name."""
    problems = list(_pre)
    if not isinstance(data, dict) or data.get("format") != SOLUTION_FORMAT:
        got = data.get("format") if isinstance(data, dict) else data
        problems.append(f"format must be {SOLUTION_FORMAT!r}, got {describe(got)}")
        raise SolutionFormatError(problems, source=source)
    problems += schema_problems("solution", data, flagged_paths(_pre))
    if not problems and instance is not None:
        for jid, a in data["assignment"].items():
            if jid not in instance.job_by_id:
                problems.append(f"assignment.{jid} names unknown job {jid!r}")
            for sid in a:
                if sid not in instance.server_by_id:
                    problems.append(f"assignment.{jid}.{sid} names unknown server {sid!r}")
        for part in ("shards", "gpus"):  # {job: {server: ...}}
            for jid, a in data.get(part, {}).items():
                if jid not in instance.job_by_id:
                    problems.append(f"{part}.{jid} names unknown job {jid!r}")
                for sid in a:
                    if sid not in instance.server_by_id:
                        problems.append(f"{part}.{jid}.{sid} names unknown server {sid!r}")
        for jid, m in data.get("stages", {}).items():
            if jid not in instance.job_by_id:
                problems.append(f"stages.{jid} names unknown job {jid!r}")
            for s, row in enumerate(m):
                for r, sid in enumerate(row):
                    if sid not in instance.server_by_id:
                        problems.append(f"stages.{jid}[{s}][{r}] names unknown server {sid!r}")
        for k, jid in enumerate(data.get("unplaced", ())):
            if jid not in instance.job_by_id:
                problems.append(f"unplaced[{k}] names unknown job {jid!r}")
    if problems:
        raise SolutionFormatError(problems, source=source)
    # a placement written by hand gives only what places the jobs; the rest are outputs
    if "unplaced" in data:
        unplaced = tuple(data["unplaced"])
    elif instance is not None:
        unplaced = tuple(j.id for j in instance.jobs if j.id not in data["assignment"])
    else:
        unplaced = ()
    return Solution(
        instance=data.get("instance", instance.name if instance is not None else ""),
        method=data.get("method", GIVEN_METHOD),
        status=Status(data.get("status", Status.FEASIBLE.value)),
        objective=data.get("objective"),
        bound=data.get("bound"),
        assignment={j: dict(a) for j, a in data["assignment"].items()},
        unplaced=unplaced,
        jobs={j: JobReport(**r) for j, r in data.get("jobs", {}).items()},
        stats=data.get("stats", {}),
        shards={j: dict(a) for j, a in data.get("shards", {}).items()},
        stages={j: tuple(tuple(row) for row in m) for j, m in data.get("stages", {}).items()},
        gpus={j: {s: tuple(g) for s, g in a.items()} for j, a in data.get("gpus", {}).items()},
    )


def load_solution(path: str | os.PathLike[str], instance: Instance | None = None) -> Solution:
    """Read a solution file; with ``instance``, its ids are checked against it."""
    data, problems, src = read_json_file(path, SolutionFormatError, "solution")
    return solution_from_dict(data, instance, source=src, _pre=problems)


def dump_solution(sol: Solution, path: str | os.PathLike[str]) -> None:
    write_json_atomic(path, solution_to_dict(sol))

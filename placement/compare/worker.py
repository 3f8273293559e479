"""One isolated run of the comparison harness: ``python -m placement.compare.worker OUT.json``
reads a :class:`placement.compare.harness.Run` as JSON on stdin and writes its row to OUT.json."""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from placement.compare.rows import RunState
from placement.errors import PlacementError
from placement.evaluation.bounds import lower_bound
from placement.evaluation.validate import validate
from placement.instances import resolve_instance
from placement.problem.variants import without_slowdowns
from placement.solving.driver import solve


def run_row(spec: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = dict(spec)
    try:
        inst = resolve_instance(spec["instance"])
    except PlacementError as e:
        row.update(
            status=RunState.REFUSED, wall_s=0.0, error=str(e).splitlines()[0] + " " + " ".join(str(e).splitlines()[1:2])
        )
        return row
    row.update(
        instance_name=inst.name,
        servers=len(inst.servers),
        gpus=int(sum(s.free_gpus for s in inst.servers)),
        jobs=len(inst.jobs),
    )
    t0 = time.monotonic()
    try:
        sol = solve(
            inst, spec["method"], time_limit_s=spec["time_limit_s"], seed=spec["seed"], threads=spec.get("threads", 1)
        )
    except PlacementError as e:
        row.update(status=RunState.REFUSED, wall_s=time.monotonic() - t0, error=str(e).splitlines()[0])
        return row
    ideal = lower_bound(without_slowdowns(inst))
    valid = sol.status.has_placement and not validate(
        inst, sol.assignment, sol.unplaced, shards=sol.shards, stages=sol.stages
    )
    weights = {j.id: j.weight for j in inst.jobs}
    wsum = sum(weights[j] for j in sol.jobs) or 1.0
    strag = sum(weights[j] * r.straggler_probability for j, r in sol.jobs.items()) / wsum if sol.jobs else None
    row.update(
        status=RunState(sol.status.value),
        objective=sol.objective,
        bound=sol.bound,
        gap=sol.gap,
        wall_s=sol.stats["wall_s"],
        valid=bool(valid),
        straggler_probability=strag,
        ideal_lower_bound=ideal,
        excess_over_ideal=None if sol.objective is None or not ideal else sol.objective / ideal - 1.0,
        placed_weight=sol.stats.get("placed_weight"),
        backend=sol.stats.get("backend"),
        backend_version=sol.stats.get("backend_version"),
        path=list(sol.stats.get("path", [])),
        error=sol.stats.get("message") if sol.status.value == "error" else None,
    )
    if valid:  # the placement itself, for the report's explanations (runs.jsonl only; runs.csv keeps the figures)
        row.update(
            assignment={j: dict(a) for j, a in sol.assignment.items()},
            shards={j: dict(z) for j, z in sol.shards.items()},
            stages={j: [list(row) for row in m] for j, m in sol.stages.items()},
        )
    return row


def main() -> None:
    out = sys.argv[1]
    spec = json.loads(sys.stdin.read())
    row = run_row(spec)
    row["peak_mem_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    with open(out, "w") as f:
        json.dump(row, f)


if __name__ == "__main__":
    main()

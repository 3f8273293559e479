"""One isolated simulation: ``python -m placement.simulation.worker OUT.json`` reads a
:class:`placement.simulation.runner.SimRun` as JSON on stdin and writes its summary row to
OUT.json (its job and timeline files go to the run's folder)."""

from __future__ import annotations

import json
import resource
import sys

from placement.errors import PlacementError
from placement.simulation.runner import SimRun, run_one


def main() -> None:
    out = sys.argv[1]
    run = SimRun(**json.loads(sys.stdin.read()))
    try:
        row, _ = run_one(run)
    except PlacementError as e:
        row = {
            "label": run.label,
            **run.config,
            "config": run.config,
            "status": "refused",
            "error": str(e).replace("\n", " "),
        }
    row["peak_mem_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    with open(out, "w") as f:
        json.dump(row, f)


if __name__ == "__main__":
    main()

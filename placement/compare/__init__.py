"""The solver comparison harness (isolated runs, resumable sweeps, Dask) and its reports."""

from __future__ import annotations

from placement.compare.harness import (
    ROW_FIELDS,
    Run,
    RunState,
    compare,
    expand_instances,
    isolated_run,
    plan,
    read_rows,
)
from placement.compare.report import shifted_geomean, summarise, write_report

__all__ = [
    "ROW_FIELDS",
    "Run",
    "RunState",
    "compare",
    "expand_instances",
    "isolated_run",
    "plan",
    "read_rows",
    "shifted_geomean",
    "summarise",
    "write_report",
]

"""The ``online`` subcommand of ``python -m placement.bench``: its arguments and its run (the
proactive loop's JCT with bootstrap intervals over seeds; :func:`placement.bench.online.bench_online`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from placement.bench.online import CELLS, GRID, GRID_CONFIGS, GRID_MEASURED, GRID_MEASURED_CONFIGS, LADDER, bench_online
from placement.bench.online import CONFIGS as ONLINE_CONFIGS
from placement.simulation.config import DECISION_TIME_LIMIT_S, SimConfig

__all__ = ["add_online", "run_online"]


def add_online(sub: Any) -> None:
    """The ``online`` parser, added to the subparsers ``sub``."""
    on = sub.add_parser("online", help="the proactive loop's JCT, effects separated, intervals over seeds")
    on.add_argument(
        "--cells", default=None, help="comma-separated [default: cluster04-pod256-markov,cluster04-hetero256-mixed]"
    )
    on.add_argument(
        "--configs", default=None, help=f"comma-separated, of {', '.join(ONLINE_CONFIGS)} [default: the ladder]"
    )
    on.add_argument("--seeds", default=None, help="comma-separated [default: 0,1,2,3,4; 0,1,2 with --grid]")
    on.add_argument("--replan-price", default="amortized")
    on.add_argument("--decision-time-limit", type=float, default=DECISION_TIME_LIMIT_S)
    on.add_argument("--parallel", type=int, default=1)
    on.add_argument(
        "--set", action="append", default=[], metavar="FIELD=JSON", help="a SimConfig field for every run (repeatable)"
    )
    on.add_argument(
        "--grid",
        action="store_true",
        help="the grid defaults are chosen on (its cells, configurations consolidate, consolidate-none, proactive, "
        "clairvoyant and seeds 0,1,2 unless given); writes grid.md too",
    )
    on.add_argument(
        "--grid-measured",
        action="store_true",
        help="the grid's windows, loads and shapes under the measured law (configurations consolidate, proactive "
        "and their straggler-free twins, seeds 0,1,2 unless given); writes grid.md too",
    )
    on.add_argument(
        "-o",
        "--out",
        default=None,
        help="default benchmarks/online (benchmarks/online-grid with --grid, benchmarks/online-grid-measured with "
        "--grid-measured)",
    )


def run_online(a: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    """Run (resuming) what the parsed arguments ``a`` ask for, then print the report."""
    if a.grid and a.grid_measured:
        ap.error("--grid and --grid-measured: one at a time")
    grid = a.grid or a.grid_measured
    default_cells = ("cluster04-pod256-markov", "cluster04-hetero256-mixed")
    a.cells = a.cells or ",".join(GRID_MEASURED if a.grid_measured else GRID if a.grid else default_cells)
    a.configs = a.configs or ",".join(GRID_MEASURED_CONFIGS if a.grid_measured else GRID_CONFIGS if a.grid else LADDER)
    a.seeds = a.seeds or ("0,1,2" if grid else "0,1,2,3,4")
    a.out = a.out or (
        "benchmarks/online-grid-measured"
        if a.grid_measured
        else "benchmarks/online-grid"
        if a.grid
        else "benchmarks/online"
    )
    unknown = [c for c in a.cells.split(",") if c not in CELLS] + [
        c for c in a.configs.split(",") if c not in ONLINE_CONFIGS
    ]
    if unknown:
        ap.error(f"unknown cell or configuration {', '.join(unknown)} (cells: {', '.join(CELLS)})")
    extra = {}
    for item in a.set:
        key, _, value = item.partition("=")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value
    known = set(SimConfig.__dataclass_fields__)
    if set(extra) - known:
        ap.error(f"--set: not SimConfig fields: {', '.join(sorted(set(extra) - known))}")
    bench_online(
        a.cells.split(","),
        a.configs.split(","),
        [int(x) for x in a.seeds.split(",")],
        Path(a.out),
        replan_price=a.replan_price,
        decision_time_limit_s=a.decision_time_limit,
        extra=extra,
        parallel=a.parallel,
    )
    print((Path(a.out) / ("grid.md" if grid else "online.md")).read_text())

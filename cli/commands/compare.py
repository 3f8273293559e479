"""``placement compare``."""

from __future__ import annotations

from typing import Any

import click

from placement.cli.common import (
    FiniteRange,
    guard,
    sweep_end,
)
from placement.cli.options import (
    wait_option,
)
from placement.errors import (
    InvalidInputError,
)


@click.command()
@click.argument("instances", nargs=-1, required=True)
@click.option(
    "-m",
    "--methods",
    default="all",
    show_default=True,
    help="Comma-separated names (or package.module:function for your own policy); 'all' = every registered method.",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@click.option("--time-limits", "--time-limit", default="10", show_default=True, help="Comma-separated seconds.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True, help="Threads per run.")
@click.option("--parallel", type=click.IntRange(min=1), default=None, help="Runs at a time (default: cores / threads).")
@click.option(
    "--grace",
    type=FiniteRange(min=0),
    default=None,
    help="Seconds past the limit before a run is killed (default max(10, limit/2)).",
)
@click.option(
    "-o",
    "--out",
    "--output",
    "out_dir",
    default="results/sweep",
    show_default=True,
    help="Folder for runs.jsonl, runs.csv, report.md and plots; re-running resumes.",
)
@click.option(
    "--dask", default=None, help="Run on a Dask cluster: an address, or 'local' (needs placement[distributed])."
)
@wait_option
@guard
def compare(
    instances: tuple[str, ...],
    methods: str,
    seeds: str,
    time_limits: str,
    threads: int,
    parallel: int | None,
    grace: float | None,
    out_dir: str,
    dask: str | None,
    wait: bool,
) -> None:
    """Compare methods on INSTANCES (files, folders or bundled names such as library/medium)."""
    from pathlib import Path

    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InvalidInputError([f"-o {out_dir}: exists and is not a folder"])
    from placement.compare.harness import compare as run_compare
    from placement.solving.registry import REGISTRY

    def nums(text: str, kind: type, what: str) -> list[Any]:
        try:
            vals = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise InvalidInputError([f"--{what} must be comma-separated numbers, got {text!r}"]) from None
        if not vals or any(v < 0 or (kind is float and not v > 0) for v in vals):
            raise InvalidInputError([f"--{what} must be positive, got {text!r}"])
        return vals

    names = [m.name for m in REGISTRY] if methods == "all" else [m.strip() for m in methods.split(",") if m.strip()]
    rows = run_compare(
        list(instances),
        names,
        seeds=nums(seeds, int, "seeds"),
        time_limits=nums(time_limits, float, "time-limits"),
        threads=threads,
        parallel=parallel,
        out_dir=out_dir,
        dask=dask,
        grace_s=grace,
        wait=wait,
        say=lambda m: click.echo(m, err=True),
    )
    from placement.compare.report import summarise
    from placement.compare.rows import RunState

    for s in summarise(rows):
        click.echo(
            f"{s['method']:14s} solved {s['solved']}/{s['runs']}  optimal {s['optimal']}  "
            f"objective/best {s['objective_gm_ratio']:.4f}  time {s['time_sgm_s']:.2f}s  failed {s['failed']}"
        )
    click.echo(f"wrote {out_dir}/runs.jsonl, runs.csv, report.md, profile.png, objective_vs_time.png, time_vs_size.png")
    bad = sum(1 for r in rows if RunState(r["status"]).unsuccessful)
    sweep_end("compare", "runs", bad, len(rows), f"{out_dir}/report.md")

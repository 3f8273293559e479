"""What ``placement simulate`` shows: a single configuration run here with a progress bar of
jobs finished, and the table of a sweep's runs (split from :mod:`.simulate`, its options)."""

from __future__ import annotations

import json
import sys
from typing import Any

from placement.cli.common import console

__all__ = ["simulate_here", "simulation_table"]


def simulate_here(run: Any, runs: list[Any], out: Any) -> list[Any]:
    """One configuration to run: in this process, with a progress bar of jobs finished."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from placement.simulation.runner import report_runs, run_one

    out.mkdir(parents=True, exist_ok=True)
    prog = Progress(
        TextColumn("[bold]simulate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        disable=not sys.stderr.isatty(),
        transient=False,
    )
    with prog:
        task = prog.add_task(run.label, total=None)

        def progress(t: float, finished: int, total: int) -> None:
            prog.update(task, completed=finished, total=total, description=f"{run.label}: day {t / 86400:.1f}")

        row, _ = run_one(run, progress=progress)
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    return report_runs(runs, out)


def simulation_table(rows: list[Any]) -> None:
    from rich.table import Table

    from placement.simulation.sweep_report import inflation_table, knowledge_label

    infl = {r["label"]: r for r in inflation_table(rows)}
    t = Table(title="simulation (times in seconds)", show_edge=False, pad_edge=False)
    for c in (
        "method",
        "knowledge",
        "dynamics",
        "seed",
        "finished",
        "mean JCT",
        "p99 JCT",
        "mean queue",
        "GPU util",
        "inflation",
        "removed",
    ):
        t.add_column(c, justify="right" if c not in ("method", "knowledge", "dynamics") else "left")
    for r in rows:
        if r.get("status") != "finished":
            cells = (r.get("method"), r.get("knowledge"), r.get("dynamics"), r.get("seed"), r.get("status"))
            t.add_row(*map(str, cells), *["-"] * 6)
            continue
        i = infl.get(r["label"], {})
        share = i.get("share_removed")
        t.add_row(
            r["method"],
            knowledge_label(r),
            r["dynamics"],
            str(r["seed"]),
            f"{r['jobs_finished']}/{r['jobs']}",
            f"{r['avg_jct_s']:,.0f}",
            f"{r['p99_jct_s']:,.0f}",
            f"{r['avg_queue_s']:,.0f}",
            f"{100 * r['gpu_utilization']:.1f}%",
            "-" if i.get("inflation_s") is None else f"{i['inflation_s']:,.0f}",
            "-" if share is None else f"{100 * share:.1f}%",
        )
    console().print(t)

"""Several simulation configurations side by side: methods x knowledge x dynamics x seeds,
each in its own process (the comparison harness's isolation), resumable (summaries are
appended to ``runs.jsonl`` as they finish), optionally on Dask; then ``summary.json``,
``jobs/<config>.csv``, ``timeline/<config>.csv``, ``report.md`` and the plots.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from placement.compare.harness import isolated, read_rows, run_into
from placement.compare.lock import sweep_lock
from placement.compare.spawn import check_workers
from placement.errors import InvalidInputError
from placement.simulation.config import PLAN_BY, SimConfig, SimResult
from placement.simulation.sweep_report import write_outputs

__all__ = [
    "SimRun",
    "plan_runs",
    "run_one",
    "isolated_sim",
    "simulate_sweep",
    "report_runs",
    "JOB_FIELDS",
    "HELD_FIELDS",
]

HELD_FIELDS = ("job", "from_s", "to_s", "placement")
"""``held/<label>.csv``: every interval a job held one placement (a moved job has several)."""

JOB_FIELDS = (
    "job",
    "workers",
    "iterations",
    "submit_s",
    "start_s",
    "end_s",
    "jct_s",
    "queue_s",
    "run_s",
    "ideal_run_s",
    "slowdown",
    "straggled_iterations",
    "servers",
    "moves",
    "preemptions",
    "isolated_s",
    "placement",
    "shards",
    "stages",
)
TIMELINE_POINTS = 2000
"""Most rows of a configuration's timeline file (evenly thinned)."""


@dataclass(frozen=True)
class SimRun:
    """One configuration of a sweep: where the cluster and the trace are, how the trace is
    read, and the :class:`SimConfig` fields."""

    cluster: str
    trace: str
    trace_options: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    out_dir: str | None = None
    decision_log: bool = False
    """Write every decision to ``out_dir/decisions/<label>.jsonl``
    (:class:`~placement.simulation.observations.DecisionLog`)."""

    @property
    def label(self) -> str:
        c = self.config
        return (
            (
                f"{c.get('method', 'greedy')}-{c.get('knowledge', 'oracle')}-{c.get('dynamics', 'markov')}"
                f"{'' if c.get('plan_by', PLAN_BY[0]) == PLAN_BY[0] else '-by-' + c['plan_by']}-seed{c.get('seed', 0)}"
            )
            .replace("/", "_")
            .replace(":", "_")
        )


def plan_runs(
    cluster: str,
    trace: str,
    trace_options: dict[str, Any],
    *,
    methods: Sequence[str],
    knowledge: Sequence[str],
    dynamics: Sequence[str],
    seeds: Sequence[int],
    common: dict[str, Any],
    plan_by: Sequence[str] = (PLAN_BY[0],),
    reference: bool = True,
    out_dir: str | None = None,
    decision_log: bool = False,
) -> list[SimRun]:
    """Every combination; with ``reference``, each method also runs under ``dynamics none``
    (the straggler-free reference that inflation is measured against; knowledge does not
    matter there, so once per method and seed)."""
    runs = []
    for m in methods:
        for s in seeds:
            for d in dynamics:
                for k in knowledge:
                    for pb in plan_by:
                        # the views differ in nothing where nothing is known
                        pb = PLAN_BY[0] if k == "oblivious" or d == "none" else pb
                        config = {**common, "method": m, "knowledge": k, "dynamics": d, "seed": s, "plan_by": pb}
                        runs.append(SimRun(cluster, trace, dict(trace_options), config, out_dir, decision_log))
            if reference and "none" not in dynamics:
                runs.append(
                    SimRun(
                        cluster,
                        trace,
                        dict(trace_options),
                        {
                            **common,
                            "method": m,
                            "knowledge": "oblivious",
                            "dynamics": "none",
                            "seed": s,
                            "plan_by": PLAN_BY[0],
                        },
                        out_dir,
                        decision_log,
                    )
                )
    return list({r.label: r for r in runs}.values())


def load_inputs(run: SimRun) -> tuple[Any, Any]:
    """The cluster instance and the workload of ``run`` (jobs wider than the cluster refused
    by name, unless the trace options drop them)."""
    from placement.instances import resolve_instance
    from placement.simulation.workload import read_trace

    cluster = resolve_instance(run.cluster)
    total = int(sum(s.free_gpus for s in cluster.servers))
    options = dict(run.trace_options)
    if options.get("hybrid_fraction"):
        options["most_gpus"] = max(s.gpus for s in cluster.servers)  # a tensor group within a server
    workload = read_trace(run.trace, max_workers=total, **options)
    return cluster, workload


def check_inputs(runs: Sequence[SimRun]) -> Any:
    """The inputs every run of a sweep shares, read once before any run (bad input raises
    :class:`~placement.errors.InvalidInputError`, naming the file and row): the cluster, the
    trace (which must leave at least one job), any replayed slowdown series and any calibrated
    profiles.  Returns the
    workload."""
    from placement.simulation.dynamics import read_replay

    try:
        _, workload = load_inputs(runs[0])
    except InvalidInputError:
        raise
    except ValueError as e:
        raise InvalidInputError([str(e)]) from None
    if not workload.jobs:
        raise InvalidInputError([f"--trace {runs[0].trace}: no job left to simulate ({workload.source})"])
    for path in dict.fromkeys(r.config.get("replay_path") for r in runs if r.config.get("dynamics") == "replay"):
        if path:
            read_replay(path)
    for path in dict.fromkeys(r.config.get("profiles") for r in runs):
        if path:
            from placement.formats import load_instance

            load_instance(path)
    return workload


def run_one(
    run: SimRun, *, progress: Callable[[float, int, int], None] | None = None
) -> tuple[dict[str, Any], SimResult]:
    """Run ``run`` in this process; writes its job and timeline files when it has an
    ``out_dir``.  Returns its summary row and the result."""
    from placement.simulation.engine import simulate

    cluster, workload = load_inputs(run)
    log_path = str(Path(run.out_dir) / "logs" / f"{run.label}.csv") if run.out_dir else None
    decisions_path = None
    if run.decision_log and run.out_dir:
        (Path(run.out_dir) / "decisions").mkdir(parents=True, exist_ok=True)
        decisions_path = str(Path(run.out_dir) / "decisions" / f"{run.label}.jsonl")
    res = simulate(
        cluster,
        workload,
        SimConfig(**run.config),
        progress=progress,
        log_path=log_path,
        decisions_path=decisions_path,
    )
    row = {
        "label": run.label,
        "status": "finished",
        **res.summary,
        "config": run.config,
        "trace": run.trace,
        "trace_source": workload.source,
        "cluster": run.cluster,
        "dropped": dict(workload.dropped),
    }
    if run.out_dir:
        write_run_files(Path(run.out_dir), run.label, res)
    return row, res


def write_run_files(out: Path, label: str, res: SimResult) -> None:
    from placement.visual.timeline import servers_over_time

    (out / "servers").mkdir(parents=True, exist_ok=True)
    servers_over_time(
        list(res.truth_start),
        res.truth_start,
        res.slowdown_changes,
        res.jobs,
        out / "servers" / f"{label}.png",
        held=res.held,
        title=f"{label}: servers over time",
    )
    (out / "held").mkdir(parents=True, exist_ok=True)
    with open(out / "held" / f"{label}.csv", "w", newline="") as f:
        w0 = csv.DictWriter(f, fieldnames=HELD_FIELDS)
        w0.writeheader()
        w0.writerows(res.held)
    (out / "jobs").mkdir(parents=True, exist_ok=True)
    (out / "timeline").mkdir(parents=True, exist_ok=True)
    with open(out / "jobs" / f"{label}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=JOB_FIELDS)
        w.writeheader()
        w.writerows(res.jobs)
    tl = res.timeline
    n = len(tl.get("time_s", []))
    step = max(1, math.ceil(n / TIMELINE_POINTS))
    with open(out / "timeline" / f"{label}.csv", "w", newline="") as f:
        w2 = csv.writer(f)
        w2.writerow(["time_s", "queued", "running", "used_gpus"])
        for i in list(range(0, n, step)) + ([n - 1] if n and (n - 1) % step else []):
            w2.writerow([tl["time_s"][i], tl["queued"][i], tl["running"][i], tl["used_gpus"][i]])


def isolated_sim(run: SimRun, timeout_s: float | None = None) -> dict[str, Any]:
    """``run`` in a fresh process (``python -m placement.simulation.worker``), killed past
    ``timeout_s``; always returns a row."""
    row: dict[str, Any] = {"label": run.label, **run.config, "config": run.config}
    return isolated("placement.simulation.worker", asdict(run), row, timeout_s)


def simulate_sweep(
    runs: Sequence[SimRun],
    out_dir: str | os.PathLike[str],
    *,
    parallel: int = 1,
    dask: str | None = None,
    timeout_s: float | None = None,
    progress: bool | None = None,
    wait: bool = False,
    say: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
) -> list[dict[str, Any]]:
    """Run every configuration not yet in ``out_dir/runs.jsonl`` (each in its own process),
    then write the summary, the report and the plots over every row of the folder.  One
    sweep at a time per folder, and workers checked before any run, as for
    :func:`placement.compare.harness.compare`."""
    with sweep_lock(out_dir, wait=wait, say=say):
        return _sweep_locked(runs, Path(out_dir), parallel, dask, timeout_s, progress, say)


def _sweep_locked(
    runs: Sequence[SimRun],
    out: Path,
    parallel: int,
    dask: str | None,
    timeout_s: float | None,
    progress: bool | None,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    jsonl = out / "runs.jsonl"
    done = {r["label"] for r in read_rows(jsonl) if r.get("status") == "finished"}
    todo = [r for r in runs if r.label not in done]
    say(
        f"placement simulate: {len(runs)} configurations ({len(runs) - len(todo)} already in {jsonl}), "
        f"{parallel} at a time on {'Dask at ' + dask if dask else 'this machine'}"
    )
    if todo:
        check_workers(["placement.simulation.worker"])
    run_into(
        jsonl,
        todo,
        isolated_sim,
        parallel=parallel,
        dask=dask,
        show=sys.stderr.isatty() if progress is None else progress,
        timeout_s=timeout_s,
        describe=lambda row: f"{row['label']}: {row['status']}",
    )
    return report_runs(runs, out)


def report_runs(runs: Sequence[SimRun], out: Path) -> list[dict[str, Any]]:
    """The rows of ``runs`` in ``out/runs.jsonl`` (the latest of each: a re-run after a crash
    replaces the crashed row), in plan order, with the folder's outputs written from them."""
    latest = {r["label"]: r for r in read_rows(out / "runs.jsonl")}
    rows = [latest[r.label] for r in runs if r.label in latest]
    write_outputs(rows, out)
    return rows

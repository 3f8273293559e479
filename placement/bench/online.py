"""The proactive loop's benchmark (``python -m placement.bench online``): mean and tail JCT with
95% bootstrap intervals over seeds, and the effects separated.

Each *cell* is a workload on a cluster under one hidden-truth model; each *configuration* is a
rung of the ladder that separates the effects:

- ``consolidate``: oblivious consolidation, placed at arrival (the baseline);
- ``consolidate-none``: the same with no slowdowns at all (the baseline's straggler inflation
  is its mean JCT minus this one's);
- ``arrival``: ``auto`` with estimated knowledge, placed at arrival only;
- ``defrag``: ``auto``, oblivious, re-planning every hour (defragmentation alone);
- ``defrag-none``: the same with no slowdowns at all (oblivious knowledge's straggler
  inflation with re-planning is ``defrag`` minus this);
- ``oracle``: ``auto``, the true distributions, re-planning (straggler avoidance);
- ``proactive``: ``auto``, estimated knowledge, re-planning (what a user can run: the
  defaults of ``placement simulate -m auto --knowledge estimated``);
- ``proactive-cp``: ``proactive`` whose estimator forgets what a server showed before its law
  last changed (``--change-points bocpd``);
- ``clairvoyant``: ``auto`` with the hidden state now and its law (forecasts over each job's
  horizon), re-planning with free moves: what prediction could reach at most.

Every configuration of a cell runs on the same seeds, and a seed fixes the hidden truth, so
the effects are *paired*: each is the mean over seeds of the per-seed relative change, with a
percentile bootstrap interval over seeds (``BOOTSTRAP`` resamples, seeded).  Every run is a
``placement simulate`` run in its own process (the simulation sweep), one sweep folder per
(cell, configuration) under ``out``, so an interrupted benchmark resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from placement.simulation.config import DECISION_TIME_LIMIT_S, size_class_fields

__all__ = [
    "CELLS",
    "CONFIGS",
    "LADDER",
    "GRID",
    "GRID_CONFIGS",
    "GRID_MEASURED",
    "GRID_MEASURED_CONFIGS",
    "Cell",
    "bootstrap_mean",
    "paired_change",
    "bench_online",
    "run_cells",
    "removed_of",
]

BOOTSTRAP = 10_000
WINDOW = {"window_start_s": 2_419_200.0, "window_s": 48 * 3600.0}
"""Days 28-30 of an ElasticFlow trace: the README's window."""
DAY = 86_400.0


def days(first: int, n: int = 2, **more: Any) -> dict[str, Any]:
    """Trace options of a window of ``n`` days from day ``first`` (and ``more``: ``load``)."""
    return {"window_start_s": first * DAY, "window_s": n * DAY, **more}


@dataclass(frozen=True)
class Cell:
    """A workload on a cluster under one hidden-truth model."""

    name: str
    cluster: str
    trace: str
    dynamics: str
    trace_options: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    """:class:`~placement.simulation.config.SimConfig` fields of the dynamics
    (``episode_median_s``, ``persistent_share``)."""


_MARKOV_GRID: dict[str, Cell] = {
    c.name: c
    for c in (
        Cell("grid-c04d28-pod256", "pod256", "elasticflow-cluster04", "markov", days(28)),
        Cell("grid-c04d28-pod256-load0.5", "pod256", "elasticflow-cluster04", "markov", days(28, load=0.5)),
        Cell("grid-c04d28-pod256-load2", "pod256", "elasticflow-cluster04", "markov", days(28, load=2.0)),
        Cell("grid-c04d28-calm256", "calm256", "elasticflow-cluster04", "markov", days(28)),
        Cell("grid-c04d28-heavy128", "heavy128", "elasticflow-cluster04", "markov", days(28)),
        Cell("grid-c04d28-flat128", "flat128", "elasticflow-cluster04", "markov", days(28)),
        Cell("grid-c04d28-pod1024-load4", "pod1024", "elasticflow-cluster04", "markov", days(28, load=4.0)),
        Cell("grid-c03d28-pod256", "pod256", "elasticflow-cluster03", "markov", days(28)),
        Cell("grid-c03d28-pod256-load2", "pod256", "elasticflow-cluster03", "markov", days(28, load=2.0)),
        Cell("grid-c04d44-heavy256", "heavy256", "elasticflow-cluster04", "markov", days(44)),
        Cell("grid-c04d50-hot192", "hot192", "elasticflow-cluster04", "markov", days(50)),
        # the loaded cells on two more draws of their cluster each (which servers are hot)
        *(
            Cell(f"grid-c04d{d}-{c}-draw{s}", f"{c}-draw{s}", "elasticflow-cluster04", "markov", days(d))
            for d, c, draws in ((44, "heavy256", (31, 32)), (50, "hot192", (26, 27)))
            for s in draws
        ),
    )
}
"""The grid (``python -m placement.bench online --grid``): defaults are chosen by their worst cell."""

CELLS: dict[str, Cell] = {
    c.name: c
    for c in (
        Cell("cluster04-pod256-markov", "pod256", "elasticflow-cluster04", "markov", dict(WINDOW)),
        Cell(
            "cluster04-pod256-markov3h",
            "pod256",
            "elasticflow-cluster04",
            "markov",
            dict(WINDOW),
            {"episode_median_s": 10_800.0},
        ),
        Cell("cluster04-pod256-static", "pod256", "elasticflow-cluster04", "static", dict(WINDOW)),
        Cell("cluster04-pod256-mixed", "pod256", "elasticflow-cluster04", "mixed", dict(WINDOW)),
        Cell("cluster04-pod256-onset", "pod256", "elasticflow-cluster04", "onset", dict(WINDOW)),
        # the README window under the law measured in production (issue 49)
        Cell("cluster04-pod256-measured", "pod256", "elasticflow-cluster04", "measured", dict(WINDOW)),
        Cell("cluster03-pod256-measured", "pod256", "elasticflow-cluster03", "measured", dict(WINDOW)),
        Cell("c04d50-hot192-measured", "hot192", "elasticflow-cluster04", "measured", days(50)),
        Cell("cluster03-pod256-markov", "pod256", "elasticflow-cluster03", "markov", dict(WINDOW)),
        Cell("cluster04-hetero256-mixed", "hetero256", "elasticflow-cluster04", "mixed", dict(WINDOW)),
        Cell("cluster04-all-1024-markov", "pod1024", "elasticflow-cluster04", "markov", {}),
        Cell("cluster04-all-1024-measured", "pod1024", "elasticflow-cluster04", "measured", {}),
        # the jobs that suffer (issue 49): cluster04's widest jobs of days 20-30 (16-64 GPUs) 16 times
        # wider (256-1,024 GPUs, weak scaling) on Greyhound's production shape, under the measured law
        Cell(
            "large-c04d20-widest-probe4096-measured",
            "probe4096",
            "elasticflow-cluster04",
            "measured",
            days(20, 10, min_workers=16, widen=16),
        ),
        *_MARKOV_GRID.values(),
        # the grid's windows, loads and cluster shapes under the measured law (a cluster's own laws
        # play no part there, so the grid's draws and calm256, pod256's shape, are not repeated)
        *(
            Cell(f"{name}-measured", c.cluster, c.trace, "measured", dict(c.trace_options))
            for name, c in _MARKOV_GRID.items()
            if "-draw" not in name and c.cluster != "calm256"
        ),
    )
}
"""The cells the issue lists that the bundled data supports (no Philly trace is bundled), and
the grid's."""
GRID: tuple[str, ...] = tuple(c for c in CELLS if c.startswith("grid-") and CELLS[c].dynamics == "markov")
"""The grid a default of the proactive loop is chosen on, by its worst cell: the README window
(cluster04 days 28-30) at the trace's load, half and twice it; the same window on a calm 256-GPU
cluster, a heavy-tailed 128-GPU two-tier one, a hot one-tier one of 128 GPUs and, at four times
the load, 1,024 GPUs; cluster03's days 28-30 at its load and twice it; and two loaded windows
where queueing dominates (cluster04 days 44-46 on a heavy-tailed 256-GPU cluster, days 50-52
on a hot 192-GPU one), each also on two more draws of its cluster (other generator seeds: other
servers hot, other laws).  Every cell runs the ``markov`` truth on its cluster's slowdown laws."""
GRID_MEASURED: tuple[str, ...] = tuple(c for c in CELLS if c.startswith("grid-") and CELLS[c].dynamics == "measured")
"""The grid's windows, loads and cluster shapes under the ``measured`` law (issue 49): ten cells
(``python -m placement.bench online --grid-measured``)."""
GRID_MEASURED_CONFIGS: tuple[str, ...] = ("consolidate", "consolidate-none", "proactive", "proactive-none")
"""Consolidation and the loop, each with its straggler-free twin: the straggler inflation of
each and the loop's gain, placement quality told apart from straggler avoidance."""
GRID_CONFIGS: tuple[str, ...] = (
    "consolidate",
    "consolidate-none",
    "proactive",
    "proactive-none",
    "clairvoyant",
    "clairvoyant-replay",
)

GENERATED: dict[str, str] = {
    "hetero256": "placement generate --racks 4 --servers-per-rack 8 --gpu-types A100,V100 --hot-fraction 0.3 "
    "--jobs 1 --seed 11 --name hetero256",
    "pod1024": "placement generate --racks 16 --servers-per-rack 8 --hot-fraction 0.2 --jobs 1 --seed 7 --name pod1024",
    "calm256": "placement generate --racks 4 --servers-per-rack 8 --regime calm --jobs 1 --seed 21 --name calm256",
    "heavy128": "placement generate --racks 2 --servers-per-rack 8 --regime heavy-tail --jobs 1 --seed 22 "
    "--name heavy128",
    "flat128": "placement generate --racks 1 --servers-per-rack 16 --hot-fraction 0.3 --jobs 1 --seed 23 "
    "--name flat128",
    "heavy256": "placement generate --racks 4 --servers-per-rack 8 --regime heavy-tail --jobs 1 --seed 24 "
    "--name heavy256",
    "hot192": "placement generate --racks 3 --servers-per-rack 8 --hot-fraction 0.4 --jobs 1 --seed 25 --name hot192",
    **{
        f"heavy256-draw{s}": "placement generate --racks 4 --servers-per-rack 8 --regime heavy-tail --jobs 1 "
        f"--seed {s} --name heavy256-draw{s}"
        for s in (31, 32)
    },
    **{
        f"hot192-draw{s}": f"placement generate --racks 3 --servers-per-rack 8 --hot-fraction 0.4 --jobs 1 --seed {s} "
        f"--name hot192-draw{s}"
        for s in (26, 27)
    },
}
"""Clusters the cells use that are not bundled: the ``placement generate`` command of each
(``hetero256`` is ``pod256``'s shape with two GPU types)."""

REPLAN = {"replan": "on", "replan_every_s": 3600.0, "restart_s": 300.0}
PROACTIVE = {"method": "auto", "knowledge": "estimated", **REPLAN}
"""The proactive loop with the defaults of now."""
PREVIOUS = {**PROACTIVE, "move_margin": 0.05}
"""The proactive loop with the defaults before 2026-12-06 (a 5% move margin, jobs waiting or
not)."""
CONFIGS_ORACLE: dict[str, Any] = {"method": "auto", "knowledge": "oracle", **REPLAN}
CONFIGS: dict[str, dict[str, Any]] = {
    "consolidate": {"method": "consolidate", "knowledge": "oblivious"},
    "consolidate-none": {"method": "consolidate", "knowledge": "oblivious", "dynamics": "none"},
    "arrival": {"method": "auto", "knowledge": "estimated", "replan": "off"},
    "defrag": {"method": "auto", "knowledge": "oblivious", **REPLAN},
    "defrag-none": {"method": "auto", "knowledge": "oblivious", **REPLAN, "dynamics": "none"},
    "oracle": CONFIGS_ORACLE,
    "proactive": PROACTIVE,
    "proactive-cp": {**PROACTIVE, "change_points": "bocpd"},
    # candidates on the grid: the defaults before 2026-12-06 (proactive-m5: a 5% move margin
    # with estimated knowledge) and the same with one other default changed
    "proactive-m5": PREVIOUS,
    "proactive-m0": {**PROACTIVE, "move_margin": 0.0},
    "proactive-still": {**PROACTIVE, "queued_move_margin": 1.0},
    "proactive-p0": {**PREVIOUS, "patience": 0.0},
    "proactive-r2h": {**PREVIOUS, "replan_every_s": 7200.0},
    "proactive-expected": {**PREVIOUS, "plan_by": "expected"},
    "proactive-e30": {**PREVIOUS, "estimate_every_s": 1800.0},
    "proactive-d01": {**PREVIOUS, "decision_time_limit_s": 0.1},
    # forecasts with episode lengths by age class and states weighed by iterations (plan_by="aged")
    "proactive-aged": {**PROACTIVE, "plan_by": "aged"},
    # the learner of congested domains without recency (each domain's share over the window), and
    # with half the default recency half-life (6 ticks: an hour at the default estimate period)
    "proactive-links": {**PROACTIVE, "link_half_life_ticks": None},
    "proactive-links6": {**PROACTIVE, "link_half_life_ticks": 6.0},
    "clairvoyant": {"method": "auto", "knowledge": "clairvoyant", **REPLAN, "restart_s": 0.0},
    # the replay's control: oracle knowledge on its own start times (reproduces oracle's run exactly)
    "oracle-replay-oracle": {**CONFIGS_ORACLE, "queue": "replay", "replay_of": "oracle", "patience": 0.0},
    # the hidden future known (each server's realised path over a job's horizon), moves priced
    # as the loop's: what knowing the future buys, every other rule the loop's
    "hindsight": {"method": "auto", "knowledge": "hindsight", **REPLAN},
    # the loop with no stragglers at all: its own straggler inflation is proactive minus this
    "proactive-none": {**PROACTIVE, "dynamics": "none"},
    # the clairvoyant placement on the loop's own start times (queue replay): what knowing the
    # future buys in placement alone, with who runs when held fixed
    "clairvoyant-replay": {
        "method": "auto",
        "knowledge": "clairvoyant",
        **REPLAN,
        "restart_s": 0.0,
        "patience": 0.0,
        "queue": "replay",
        "replay_of": "proactive",
    },
    # the same on oracle knowledge's starts (the reference bounds each knowledge on its own starts)
    "clairvoyant-replay-oracle": {
        "method": "auto",
        "knowledge": "clairvoyant",
        **REPLAN,
        "restart_s": 0.0,
        "patience": 0.0,
        "queue": "replay",
        "replay_of": "oracle",
    },
}
LADDER: tuple[str, ...] = (
    "consolidate",
    "consolidate-none",
    "arrival",
    "defrag",
    "defrag-none",
    "oracle",
    "proactive",
    "proactive-cp",
    "clairvoyant",
)
"""The ladder that separates the effects (the default configurations of the benchmark); the
other configurations are the grid's candidates."""
REMOVED: tuple[str, ...] = ("oracle", "proactive", "proactive-cp", "clairvoyant")
"""The configurations whose share removed of oblivious knowledge's straggler inflation with
re-planning (``(defrag - x) / (defrag - defrag-none)``, per seed) is reported."""
EFFECTS: tuple[tuple[str, str, str], ...] = (
    ("proactive vs consolidation (the goal)", "proactive", "consolidate"),
    ("priced re-planning vs none, estimated", "proactive", "arrival"),
    ("placement at arrival", "arrival", "consolidate"),
    ("defragmentation (re-planning, oblivious)", "defrag", "consolidate"),
    ("straggler avoidance (oracle, re-planning)", "oracle", "defrag"),
    ("estimation (estimated against oracle)", "proactive", "oracle"),
    ("change-point detection (bocpd against the whole window)", "proactive-cp", "proactive"),
    ("headroom (clairvoyant, free moves, against proactive)", "clairvoyant", "proactive"),
    ("clairvoyant vs consolidation", "clairvoyant", "consolidate"),
    ("aged forecasts vs consolidation", "proactive-aged", "consolidate"),
    ("aged forecasts vs the default's", "proactive-aged", "proactive"),
)


# ------------------------------------------------------------------ statistics
def bootstrap_mean(values: Sequence[float], seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``values`` and its percentile bootstrap interval (resampling the values).

    >>> m, lo, hi = bootstrap_mean([1.0, 2.0, 3.0, 4.0])
    >>> m, lo <= m <= hi
    (2.5, True)
    """
    x = np.asarray(values, dtype=float)
    if not len(x):
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(BOOTSTRAP, len(x)))].mean(axis=1)
    a = (1.0 - level) / 2.0
    return float(x.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1.0 - a))


def paired_change(new: dict[int, float], base: dict[int, float], seed: int = 0) -> tuple[float, float, float, int]:
    """Mean over the seeds both have of ``new / base - 1``, with its bootstrap interval, and
    how many seeds were paired."""
    common = sorted(set(new) & set(base))
    m, lo, hi = bootstrap_mean([new[s] / base[s] - 1.0 for s in common if base[s]], seed)
    return m, lo, hi, len(common)


# ------------------------------------------------------------------ running
def cluster_file(name: str, out: Path) -> str:
    """A bundled cluster's name, or the generated cluster written to ``out/clusters/``
    (``probe4096``: Greyhound's production shape, :func:`placement.bench.probes.probe_cluster`)."""
    if name not in GENERATED and name != "probe4096":
        return name
    from placement.formats import dump_instance
    from placement.instances.generate import from_source

    path = out / "clusters" / f"{name}.json"
    if not path.is_file():
        from placement.bench.probes import probe_cluster

        path.parent.mkdir(parents=True, exist_ok=True)
        dump_instance(probe_cluster() if name == "probe4096" else from_source(GENERATED[name]), path)
    return str(path.resolve())


def _runs(cell: Cell, config: dict[str, Any], seeds: Sequence[int], common: dict[str, Any], out: Path) -> list[Any]:
    """The runs of ``config`` on ``cell``; a ``replay_of`` configuration replays, seed by seed,
    the start times of that configuration's run in the same cell (which runs first)."""
    from placement.simulation.runner import SimRun

    cluster = cluster_file(cell.cluster, out.parent.parent)
    c = {**common, **cell.options, "dynamics": cell.dynamics, **config}
    of = c.pop("replay_of", None)
    runs = []
    for s in seeds:
        more: dict[str, Any] = {"seed": s}
        if of is not None:
            ref = SimRun(
                cluster, cell.trace, {}, {**common, **cell.options, "dynamics": cell.dynamics, **CONFIGS[of], "seed": s}
            )
            more["replay_starts"] = str((out.parent / of / "jobs" / f"{ref.label}.csv").resolve())
        runs.append(SimRun(cluster, cell.trace, dict(cell.trace_options), {**c, **more}, str(out)))
    return runs


def run_cells(
    cells: Sequence[str],
    configs: dict[str, dict[str, Any]],
    seeds: Sequence[int],
    common: dict[str, Any],
    out: Path,
    parallel: int = 1,
    say: Callable[[str], None] = print,
) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """Run (resuming) every cell x configuration (name -> :class:`SimConfig` fields) x seed,
    one sweep folder per (cell, configuration) under ``out``; the finished runs' summaries by
    cell, configuration and seed."""
    from placement.simulation.runner import simulate_sweep

    per_cell: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    missing = sorted({c["replay_of"] for c in configs.values() if "replay_of" in c} - set(configs))
    if missing:
        raise ValueError(f"configurations replay the starts of {', '.join(missing)}: run those too")
    # a configuration that replays another's starts runs after it
    ordered = sorted(configs.items(), key=lambda kv: "replay_of" in kv[1])
    for cname in cells:
        per: dict[str, dict[int, dict[str, Any]]] = {}
        for name, config in ordered:
            folder = out / cname / name
            runs = _runs(CELLS[cname], config, seeds, common, folder)
            rows = simulate_sweep(runs, folder, parallel=parallel, progress=False, say=say)
            per[name] = {int(r["seed"]): r for r in rows if r.get("status") == "finished"}
        per_cell[cname] = per
    return per_cell


def bench_online(
    cells: Sequence[str],
    configs: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    replan_price: str = "amortized",
    decision_time_limit_s: float = DECISION_TIME_LIMIT_S,
    extra: dict[str, Any] | None = None,
    parallel: int = 1,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (resuming) every cell x configuration x seed, then write ``out/online.md`` and
    ``out/online.json``: per configuration the means with their intervals, and per cell the
    paired effects.  ``extra``: :class:`~placement.simulation.config.SimConfig` fields for every
    run (``replan_events``, ``move_budget_per_hour``, ...; a configuration's own fields win).
    Returns what ``online.json`` holds."""
    from dataclasses import fields

    from placement.simulation.config import SimConfig

    unknown = sorted(set(extra or {}) - {f.name for f in fields(SimConfig)})
    if unknown:
        raise ValueError(f"not SimConfig fields: {', '.join(unknown)}")
    common = {"decision_time_limit_s": decision_time_limit_s, "replan_price": replan_price, **(extra or {})}
    result: dict[str, Any] = {"seeds": list(seeds), "replan_price": replan_price, "extra": extra or {}, "cells": {}}
    from placement.bench.online_report import write_report

    per_cell = run_cells(cells, {c: CONFIGS[c] for c in configs}, seeds, common, out, parallel, say)
    for cname, per in per_cell.items():
        result["cells"][cname] = _cell_summary(per)
    write_report(result, out)
    return result


METRICS = (
    "jobs",
    "avg_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    *size_class_fields(),
    "top1pct_jct_share",
    "avg_queue_s",
    "migrations",
    "preemptions",
    "rho_p50",
    "rho_p95",
    "gpu_utilization",
    "restart_gpu_hours",
    "decision_time_p99_s",
    "replan_time_p99_s",
    "wall_s",
)


def _cell_summary(per: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    for config, by_seed in per.items():
        stats: dict[str, Any] = {"seeds": sorted(by_seed)}
        for metric in METRICS:
            vals = [float(r[metric]) for r in by_seed.values() if r.get(metric) is not None]
            stats[metric] = bootstrap_mean(vals) if vals else None
        configs[config] = stats
    effects = []
    for name, new, base in EFFECTS:
        if new in per and base in per:
            for metric in ("avg_jct_s", "p99_jct_s"):
                m, lo, hi, n = paired_change(_metric(per[new], metric), _metric(per[base], metric))
                effects.append(
                    {"effect": name, "new": new, "base": base, "metric": metric, "change": [m, lo, hi], "seeds": n}
                )
    inflation = None
    if "consolidate" in per and "consolidate-none" in per:
        m, lo, hi, _ = paired_change(
            _metric(per["consolidate"], "avg_jct_s"), _metric(per["consolidate-none"], "avg_jct_s")
        )
        inflation = [m, lo, hi]
    removed = removed_of(per, "defrag", "defrag-none", REMOVED)
    own = {}
    for c in per:  # each configuration's own straggler inflation, where its none twin ran
        if f"{c}-none" in per:
            m, lo, hi, n = paired_change(_metric(per[c], "avg_jct_s"), _metric(per[f"{c}-none"], "avg_jct_s"))
            if n:
                own[c] = [m, lo, hi]
    return {
        "own_inflation": own,
        "run_time_vs_best": _run_time_vs_best(per),
        "configs": configs,
        "effects": effects,
        "consolidation_inflation": inflation,
        "inflation_removed": removed,
        "consolidation_inflation_removed": removed_of(per, "consolidate", "consolidate-none", tuple(per)),
        "vs_consolidation": {
            c: {m: list(paired_change(_metric(per[c], m), _metric(per["consolidate"], m))[:3]) for m in CHANGED}
            for c in per
            if "consolidate" in per and c != "consolidate" and per[c]
        },
    }


RUN_REFERENCES = ("clairvoyant", "hindsight", "clairvoyant-replay", "clairvoyant-replay-oracle")
"""The references that bound the run time (JCT less queueing) of every cell and draw: knowing
more makes each job run faster, while the queueing (who starts when, under FIFO with backfill)
it does not bound (issue 53; ``benchmarks/online-grid-draws``)."""


def _run_time_vs_best(per: dict[str, dict[int, dict[str, Any]]]) -> dict[str, float]:
    """Each reference's mean run time (JCT less queueing, over seeds) over the better of
    oracle knowledge's and the loop's (``proactive``)."""

    def run(c: str) -> float | None:
        vals = [float(r["avg_jct_s"]) - float(r["avg_queue_s"]) for r in per.get(c, {}).values()]
        return float(np.mean(vals)) if vals else None

    best = [v for v in (run("oracle"), run("proactive")) if v]
    if not best:
        return {}
    return {c: v / min(best) for c in RUN_REFERENCES if (v := run(c))}


CHANGED = ("avg_jct_s", "p99_jct_s", "avg_queue_w1_s")
"""The metrics whose paired change against consolidation every configuration reports."""


def _metric(by_seed: dict[int, dict[str, Any]], metric: str) -> dict[int, float]:
    return {s: float(r[metric]) for s, r in by_seed.items() if r.get(metric) is not None}


def removed_of(
    per: dict[str, dict[int, dict[str, Any]]], base: str, none: str, configs: Sequence[str]
) -> dict[str, Any]:
    """Per configuration of ``configs`` that ran (but ``base`` and the ``none`` twins): the
    share of ``base``'s straggler inflation (``base - none``) it removes, per seed, and its
    mean over seeds with the bootstrap interval."""
    out: dict[str, Any] = {}
    if base not in per or none not in per:
        return out
    for config in (c for c in configs if c in per and c != base and "none" not in c):
        seeds = sorted(set(per[config]) & set(per[base]) & set(per[none]))
        shares = [
            (per[base][s]["avg_jct_s"] - per[config][s]["avg_jct_s"])
            / (per[base][s]["avg_jct_s"] - per[none][s]["avg_jct_s"])
            for s in seeds
            if per[base][s]["avg_jct_s"] != per[none][s]["avg_jct_s"]
        ]
        out[config] = bootstrap_mean(shares) if shares else None
    return out

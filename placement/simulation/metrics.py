"""The summary of a simulation (:data:`placement.simulation.config.SUMMARY_FIELDS`), from its
finished jobs' rows and its counters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from placement.simulation.config import SIZE_CLASSES, SimConfig

__all__ = ["summarise", "top_share", "by_size", "finish_time_fairness"]


def top_share(values: np.ndarray, fraction: float) -> float | None:
    """The share of ``values``' sum that its largest ``fraction`` (at least one) carry.

    >>> top_share(np.array([1.0, 1.0, 8.0]), 0.01)
    0.8
    """
    if not len(values) or values.sum() <= 0:
        return None
    k = max(1, int(np.floor(fraction * len(values))))
    return float(np.sort(values)[-k:].sum() / values.sum())


def finish_time_fairness(rows: Sequence[dict[str, Any]], total_gpus: int) -> np.ndarray:
    """Themis's finish-time fairness of each finished job: ``rho = JCT / T_fair``, with ``T_fair``
    its run alone (``isolated_s``) on its fair share of the cluster, ``total_gpus / N`` GPUs
    with ``N`` the mean number of jobs in the system (queued or running) over its life: its
    isolated run when its gang fits that share, else stretched by ``workers N / total_gpus``.
    ``rho <= 1``: the job did at least as well as its equal share would have let it.

    >>> finish_time_fairness([{"submit_s": 0.0, "end_s": 10.0, "jct_s": 10.0, "workers": 1, "isolated_s": 5.0}], 4)
    array([2.])
    """
    if not rows:
        return np.zeros(0)
    sub = np.array([r["submit_s"] for r in rows], dtype=float)
    end = np.array([r["end_s"] for r in rows], dtype=float)
    # the number of jobs in the system, a step function, and its running integral
    t = np.concatenate([sub, end])
    step = np.concatenate([np.ones(len(sub)), -np.ones(len(end))])
    o = np.argsort(t, kind="stable")
    t, level = t[o], np.cumsum(step[o])
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))])

    def integral(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(t, x, side="right") - 1
        return area[i] + level[i] * (x - t[i])

    life = end - sub
    n = np.where(life > 0, (integral(end) - integral(sub)) / np.where(life > 0, life, 1.0), 1.0)
    workers = np.array([r["workers"] for r in rows], dtype=float)
    fair = np.array([r["isolated_s"] for r in rows], dtype=float) * np.maximum(1.0, workers * n / total_gpus)
    jct = np.array([r["jct_s"] for r in rows], dtype=float)
    return np.where(fair > 0, jct / np.where(fair > 0, fair, 1.0), 1.0)


def summarise(
    cfg: SimConfig,
    rows: Sequence[dict[str, Any]],
    submits: Sequence[float],
    decision_walls: Sequence[float],
    *,
    busy_gpu_s: float,
    total_gpus: int,
    migrations: int,
    wall_s: float,
    preemptions: int = 0,
    replan_walls: Sequence[float] = (),
    restart_gpu_s: float = 0.0,
    place_walls: Sequence[float] = (),
    replans_by_bound: int = 0,
    moves_repaid_alone: int = 0,
    replan_pinned_share: float | None = None,
    change_points_found: int | None = None,
    jobs_waited: int = 0,
    jobs_comm_scaled: int = 0,
    jobs_profiled: int = 0,
) -> dict[str, Any]:
    """Mean and tail JCT, queueing, makespan, utilisation, slowdown, straggled iterations,
    migrations and decision times of the finished jobs ``rows`` (``submits``: every job's
    submission time, finished or not); the share of the total JCT the longest 1% of jobs
    carry (at least one job); the GPU-hours moved jobs stood idle restarting; decision times
    of all decisions, of those that place queued jobs (``place_walls``) and of the re-plans
    (``replan_walls``; ``replans_by_bound`` of them settled by the bound, without a search);
    ``moves_repaid_alone``: the migrations whose own believed saving repaid their price;
    ``replan_pinned_share``: of the running jobs the priced re-plans looked at, the share kept
    out of the search (they could not repay a move of their own); ``change_points_found``: the
    changes of a server's law the change-point detector found (``None`` without one);
    ``jobs_waited``: the jobs the patience rule held back at least once; ``jobs_comm_scaled``:
    the trace jobs whose gradient was scaled to the reference placement's communication cap;
    ``jobs_profiled``: those that took a calibrated profile's compute and gradient;
    per size class (:data:`SIZE_CLASSES`), the finished jobs and their mean JCT, queueing and
    run; ``preemptions`` by the queue policy, and finish-time fairness (:func:`finish_time_fairness`:
    ``rho_p50``, ``rho_p95``)."""
    rho = finish_time_fairness(rows, total_gpus) if rows and "isolated_s" in rows[0] else np.zeros(0)
    jct = np.array([r["jct_s"] for r in rows])
    qd = np.array([r["queue_s"] for r in rows])
    walls = np.array(decision_walls) if decision_walls else np.zeros(1)
    first = min(submits, default=0.0)
    makespan = max((r["end_s"] for r in rows), default=first) - first
    iters = sum(r["iterations"] for r in rows)

    def pct(x: np.ndarray, q: float) -> float | None:
        return float(np.percentile(x, q)) if len(x) else None

    return {
        "method": cfg.method,
        "knowledge": cfg.knowledge,
        "dynamics": cfg.dynamics,
        "plan_by": cfg.plan_by,
        "queue": cfg.queue,
        "seed": cfg.seed,
        "jobs": len(submits),
        "jobs_finished": len(rows),
        "avg_jct_s": float(jct.mean()) if len(jct) else None,
        "p50_jct_s": pct(jct, 50),
        "p95_jct_s": pct(jct, 95),
        "p99_jct_s": pct(jct, 99),
        "makespan_s": makespan,
        "avg_queue_s": float(qd.mean()) if len(qd) else None,
        "p99_queue_s": pct(qd, 99),
        "gpu_utilization": busy_gpu_s / (total_gpus * makespan) if makespan > 0 else 0.0,
        "avg_slowdown": float(np.mean([r["slowdown"] for r in rows])) if rows else None,
        "straggled_iteration_fraction": (sum(r["straggled_iterations"] for r in rows) / iters) if iters else 0.0,
        "top1pct_jct_share": top_share(jct, 0.01),
        "migrations": migrations,
        "preemptions": preemptions,
        "rho_p50": pct(rho, 50),
        "rho_p95": pct(rho, 95),
        "moves_repaid_alone": moves_repaid_alone,
        "restart_gpu_hours": restart_gpu_s / 3600.0,
        "decisions": len(decision_walls),
        "decision_time_p50_s": float(np.percentile(walls, 50)),
        "decision_time_p99_s": float(np.percentile(walls, 99)),
        "decision_time_max_s": float(walls.max()),
        "place_time_p99_s": float(np.percentile(place_walls, 99)) if len(place_walls) else None,
        "replans": len(replan_walls),
        "replans_by_bound": replans_by_bound,
        "replan_pinned_share": replan_pinned_share,
        "change_points_found": change_points_found,
        "jobs_waited": jobs_waited,
        "jobs_comm_scaled": jobs_comm_scaled,
        "jobs_profiled": jobs_profiled,
        "replan_time_p99_s": float(np.percentile(replan_walls, 99)) if len(replan_walls) else None,
        "wall_s": wall_s,
        **by_size(rows),
    }


def by_size(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per size class (:data:`SIZE_CLASSES`): jobs, mean JCT, mean queueing, mean run (s).

    >>> by_size([{"workers": 1, "jct_s": 30.0, "queue_s": 10.0, "run_s": 20.0}])["avg_queue_w1_s"]
    10.0
    """
    out: dict[str, Any] = {}
    for name, lo, hi in SIZE_CLASSES:
        sel = [r for r in rows if lo <= r["workers"] and (hi is None or r["workers"] <= hi)]
        out[f"jobs_{name}"] = len(sel)
        for key, col in (("jct", "jct_s"), ("queue", "queue_s"), ("run", "run_s")):
            out[f"avg_{key}_{name}_s"] = float(np.mean([r[col] for r in sel])) if sel else None
    return out

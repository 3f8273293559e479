"""Benchmarks quoted in the README and the issue notes (medians, side by side, one run).

    python -m placement.bench evaluator            # 1,000-server / 1,000-job placement
    python -m placement.bench methods pod256       # every method on one instance

Timings are wall-clock medians over repeats on a shared machine: compare ratios within
one run, not numbers across runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

__all__ = ["bench_evaluator", "bench_methods", "main"]


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def bench_evaluator(repeats: int = 7) -> list[tuple[str, float, int, int]]:
    """Median seconds of :func:`placement.evaluate` on 1,000-server placements of 1,000 jobs."""
    import placement
    from placement.instances.generate import generate

    rows = []
    for regime in ("hot", "heavy-tail", "correlated"):
        inst = generate(racks=25, servers_per_rack=40, gpus_per_server=8, jobs=1000, job_mix="elasticflow",
                        regime=regime, scenarios=32, load=0.9, seed=1)
        sol = placement.solve(inst, "spread")
        asg = sol.assignment
        placement.evaluate(inst, asg)  # build the cached index once, as a scheduler would
        t = _median_time(lambda: placement.evaluate(inst, asg), repeats)
        pairs = sum(len(a) for a in asg.values())
        rows.append((regime, t, len(asg), pairs))
    return rows


def bench_methods(instance: str, time_limit: float, seeds: int) -> list[tuple[str, float, float | None, float | None, str]]:
    import placement
    from placement.registry import REGISTRY

    inst = placement.resolve_instance(instance)
    rows = []
    for m in REGISTRY:
        if m.kind == "exact":
            continue
        walls, objs, status = [], [], ""
        for seed in range(seeds):
            sol = placement.solve(inst, m.name, time_limit_s=time_limit, seed=seed)
            walls.append(float(sol.stats["wall_s"]))
            status = sol.status.value
            if sol.objective is not None:
                objs.append(sol.objective)
        rows.append((m.name, statistics.median(walls), statistics.median(objs) if objs else None,
                     placement.lower_bound(inst), status))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m placement.bench")
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("evaluator")
    e.add_argument("--repeats", type=int, default=7)
    m = sub.add_parser("methods")
    m.add_argument("instance", nargs="?", default="pod256")
    m.add_argument("--time-limit", type=float, default=10.0)
    m.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args(argv)
    if a.what == "evaluator":
        print(f"{'regime':12s} {'median s':>9s} {'jobs':>5s} {'job-server pairs':>16s}")
        for regime, t, jobs, pairs in bench_evaluator(a.repeats):
            print(f"{regime:12s} {t:9.4f} {jobs:5d} {pairs:16d}")
    else:
        rows = bench_methods(a.instance, a.time_limit, a.seeds)
        best = min(r[2] for r in rows if r[2] is not None)
        print(f"{'method':13s} {'status':9s} {'median wall s':>13s} {'median objective':>16s} {'ratio to best':>13s} {'excess over LB':>14s}")
        for name, wall, obj, lb, status in rows:
            ratio = "-" if obj is None else f"{obj / best:.4f}"
            exc = "-" if obj is None or lb is None else f"{100 * (obj - lb) / lb:.2f}%"
            print(f"{name:13s} {status:9s} {wall:13.3f} {'-' if obj is None else f'{obj:16.2f}':>16s} {ratio:>13s} {exc:>14s}")


if __name__ == "__main__":
    main()

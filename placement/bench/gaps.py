"""How far from optimal ``auto`` is: the lower bounds side by side (``python -m placement.bench
bounds``) and ``auto``'s proven gap on the seeded fleet family (``python -m placement.bench gaps
--family``)."""

from __future__ import annotations

import time
from pathlib import Path

from placement.evaluation.bounds import lower_bound
from placement.instances import resolve_instance

__all__ = ["bench_bounds", "bench_gaps_family"]


def bench_bounds(instances: list[str], objectives: list[str]) -> None:
    """Side by side on each instance: the simple bound, the plain transportation LP and the
    home-aware one (value and wall time), and each one's gap to the best objective any run
    in the ``objectives`` CSV files (``placement compare``'s ``runs.csv``) reached."""
    import csv
    import math

    from placement.formulations.transport import transport_lower_bound

    best: dict[str, float] = {}
    for path in objectives:
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row.get("objective") and row.get("valid") == "True":
                    name = row["instance_name"]
                    best[name] = min(best.get(name, math.inf), float(row["objective"]))
    print(
        f"{'instance':22s} {'best known':>12s} {'simple':>12s} {'plain LP':>12s} {'s':>6s} {'home-aware LP':>13s} {'s':>6s}  gap simple / plain / home-aware"
    )
    for ref in instances:
        inst = resolve_instance(ref)
        t0 = time.perf_counter()
        simple = lower_bound(inst)
        t1 = time.perf_counter()
        plain = transport_lower_bound(inst, time_limit_s=600, home_aware=False)
        t2 = time.perf_counter()
        home = transport_lower_bound(inst, time_limit_s=600)
        t3 = time.perf_counter()
        b = best.get(inst.name)

        def gap(x: float | None, b: float | None = b) -> str:
            return "-" if x is None or b is None else f"{100 * (b / x - 1):.2f}%"

        def num(x: float | None) -> str:
            return "-" if x is None else f"{x:,.1f}"

        print(
            f"{inst.name:22s} {num(b):>12s} {num(simple):>12s} {num(plain):>12s} {t2 - t1:6.2f} {num(home):>13s} {t3 - t2:6.2f}"
            f"  {gap(simple)} / {gap(plain)} / {gap(home)}   (simple bound {t1 - t0:.2f} s)"
        )


def bench_gaps_family(
    limits: list[float], out: Path, seed: int = 0, members: int | None = None, grace_s: float | None = None
) -> list[str]:
    """``auto``'s proven gap on the fleet family (:mod:`placement.instances.family`), each run
    isolated (the comparison harness: peak memory measured, resumable in ``out/sweep``); prints
    and returns the table (members x limits: objective, bound, gap, peak memory) with the
    median and the worst gap per limit."""
    import statistics

    from placement.compare.harness import compare
    from placement.instances.family import FAMILY_SIZE, write_family

    files = write_family(out / "instances", seed, members or FAMILY_SIZE)
    rows = compare(
        [str(f) for f in files],
        ["auto"],
        time_limits=limits,
        parallel=1,
        out_dir=out / "sweep",
        grace_s=grace_s,
        progress=False,
    )
    lines = [
        "| member | servers | GPUs | jobs | limit s | objective | bound | proven gap | peak MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by_limit: dict[float, list[float]] = {}
    for r in sorted(rows, key=lambda r: (r["time_limit_s"], str(r.get("instance_name")))):
        obj, bound = r.get("objective"), r.get("bound")
        gap = obj / bound - 1 if obj is not None and bound else None
        if gap is not None:
            by_limit.setdefault(float(r["time_limit_s"]), []).append(gap)
        lines.append(
            f"| {r.get('instance_name')} | {r.get('servers')} | {r.get('gpus')} | {r.get('jobs')} | {r['time_limit_s']:g} | "
            f"{'-' if obj is None else f'{obj:,.1f}'} | {'-' if bound is None else f'{bound:,.1f}'} | "
            f"{'-' if gap is None else f'{100 * gap:.2f}%'} | {r.get('peak_mem_mb') or 0:,.0f} |"
        )
    lines += ["", "| limit s | members with a bound | median gap | worst gap |", "|---|---|---|---|"]
    for lim in sorted(by_limit):
        g = by_limit[lim]
        lines.append(
            f"| {lim:g} | {len(g)} of {len(files)} | {100 * statistics.median(g):.2f}% | {100 * max(g):.2f}% |"
        )
    (out / "gaps.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return lines

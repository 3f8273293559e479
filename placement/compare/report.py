"""Reports of a comparison sweep: a Markdown table per method and three plots (PNG):
the Dolan-More performance profile, objective against time, and time against size.

Conventions (stated in the report): an instance is one (instance, time limit) pair; a
run counts as *solved* when it returned a valid placement; the objective ratio is the
objective over the best objective any method reached on that instance and seed (with
``best_effort``, runs that placed less weight than the best count as unsolved); time is
summarised by the shifted geometric mean with a shift of 1 s; unsolved runs enter the
objective mean at twice the worst ratio seen on their instance.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placement.compare.rows import RunState
from placement.model.tolerances import REPORT_RTOL

__all__ = ["summarise", "write_report", "shifted_geomean", "OBLIVIOUS"]

OBLIVIOUS = ("first_fit", "best_fit", "spread", "consolidate", "comm_optimal", "random")
"""Baselines that ignore slowdowns (max_survival looks at them)."""


def shifted_geomean(xs: Sequence[float], shift: float) -> float:
    if not xs:
        return math.nan
    return math.exp(sum(math.log(x + shift) for x in xs) / len(xs)) - shift


def _group(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, float, int], list[dict[str, Any]]]:
    g: dict[tuple[str, float, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        g[(r["instance"], float(r["time_limit_s"]), int(r["seed"]))].append(r)
    return g


def _solved(r: dict[str, Any], best_w: float) -> bool:
    return bool(r.get("valid")) and r.get("objective") is not None and (r.get("placed_weight") or 0) >= best_w - 1e-9


def ratios(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Objective / best per method over the instances (inf when unsolved; a refused run, which
    never ran, gets no ratio)."""
    out: dict[str, list[float]] = defaultdict(list)
    for _, rs in sorted(_group(rows).items()):
        best_w = max([(r.get("placed_weight") or 0) for r in rs if r.get("valid")] + [0.0])
        ok = [r for r in rs if _solved(r, best_w)]
        best = min((r["objective"] for r in ok), default=None)
        for r in rs:
            if r.get("status") == RunState.REFUSED:
                continue
            if best is None or not _solved(r, best_w):
                out[r["method"]].append(math.inf)
            else:
                out[r["method"]].append(r["objective"] / best if best > 0 else 1.0)
    return out


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rat = ratios(rows)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by_m: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_m[r["method"]].append(r)
    worst = max([x for xs in rat.values() for x in xs if math.isfinite(x)] + [1.0])
    # share of the oblivious baselines' excess over the ideal bound that auto removes
    removed: dict[str, list[float]] = defaultdict(list)
    for _, rs in _group(rows).items():
        auto = next((r for r in rs if r["method"] == "auto" and r.get("valid")), None)
        if auto is None:
            continue
        for r in rs:
            if r["method"] in OBLIVIOUS and r.get("valid") and r.get("placed_weight") == auto.get("placed_weight"):
                ideal = r.get("ideal_lower_bound")
                if ideal and r["objective"] > ideal * (1 + 1e-12):
                    removed[r["method"]].append((r["objective"] - auto["objective"]) / (r["objective"] - ideal))
    out = []
    for m in methods:
        rs = by_m[m]
        rm = rat.get(m, [])
        solved = sum(1 for x in rm if math.isfinite(x))
        out.append(
            {
                "method": m,
                "runs": len(rs),
                "solved": solved,
                "optimal": sum(1 for r in rs if r.get("status") == RunState.OPTIMAL),
                "failed": sum(1 for r in rs if "status" in r and RunState(r["status"]).failed),
                "refused": sum(1 for r in rs if r.get("status") == RunState.REFUSED),
                "time_sgm_s": shifted_geomean([float(r.get("wall_s") or 0.0) for r in rs], 1.0),
                "objective_gm_ratio": shifted_geomean([x if math.isfinite(x) else 2 * worst for x in rm], 0.0)
                if rm
                else math.nan,
                "wins": sum(1 for x in rm if math.isfinite(x) and x <= 1 + REPORT_RTOL),
                "auto_removes": (sum(removed[m]) / len(removed[m])) if removed.get(m) else None,
                "peak_mem_mb": max((float(r.get("peak_mem_mb") or 0) for r in rs), default=0.0),
            }
        )
    return out


def write_report(rows: Sequence[dict[str, Any]], out: Path) -> None:
    import platform

    summary = summarise(rows)
    insts = sorted({(r["instance"], r.get("gpus")) for r in rows}, key=lambda t: str(t[0]))
    lines = [
        "# Comparison report",
        "",
        f"{len(rows)} runs, {len(insts)} instances, machine: {platform.machine()}, {__import__('os').cpu_count()} cores, "
        f"Python {platform.python_version()}.",
        "",
        "| method | runs | solved | optimal | failed | refused | time SGM (s, shift 1) | objective / best (GM) | wins | peak MB | share of excess removed by auto |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        rem = "-" if s["auto_removes"] is None else f"{100 * s['auto_removes']:.1f}%"
        lines.append(
            f"| {s['method']} | {s['runs']} | {s['solved']} | {s['optimal']} | {s['failed']} | {s['refused']} | "
            f"{s['time_sgm_s']:.3f} | {s['objective_gm_ratio']:.4f} | {s['wins']} | {s['peak_mem_mb']:.0f} | {rem} |"
        )
    lines += [
        "",
        "Solved: a valid placement (with `best_effort`, of the most weight any method placed). Objective / best: "
        "geometric mean over instances of the objective over the best any method reached (unsolved runs at twice "
        "the worst ratio seen). Share of excess removed by auto: for the slowdown-oblivious baselines, the mean of "
        "(baseline - auto) / (baseline - ideal lower bound), the ideal bound being the all-slowdowns-1 lower bound.",
        "",
        "![performance profile](profile.png)",
        "![objective against time](objective_vs_time.png)",
        "![time against size](time_vs_size.png)",
        "",
    ]
    lines += per_instance_table(rows)
    (out / "report.md").write_text("\n".join(lines))
    _plots(rows, out)


def per_instance_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown: the objective of every method on every (instance, limit, seed), the best in
    bold; a run without a placement shows its status."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    lines = [
        "",
        "## Per instance",
        "",
        "Objective (bold: the best on the row); otherwise the run's status.",
        "",
        "| instance | limit s | seed | " + " | ".join(methods) + " |",
        "|---|---|---|" + "---|" * len(methods),
    ]
    for (inst, limit, seed), rs in sorted(_group(rows).items()):
        by = {r["method"]: r for r in rs}
        valid = [r["objective"] for r in rs if r.get("valid") and r.get("objective") is not None]
        best = min(valid, default=None)
        cells = []
        for m in methods:
            r = by.get(m)
            if r is None:
                cells.append("")
            elif r.get("valid") and r.get("objective") is not None:
                text = f"{r['objective']:.6g}"
                cells.append(f"**{text}**" if best is not None and r["objective"] <= best * (1 + REPORT_RTOL) else text)
            else:
                cells.append(str(r.get("status")))
        lines.append(f"| {inst} | {limit:g} | {seed} | " + " | ".join(cells) + " |")
    return lines


def _plots(rows: Sequence[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rat = ratios(rows)
    methods = list(rat)
    cmap = plt.get_cmap("tab20")
    style: dict[str, dict[str, Any]] = {
        m: dict(color=cmap(k % 20), linestyle=("-", "--", ":", "-.")[k % 4]) for k, m in enumerate(methods)
    }
    marker = {m: "os^vDP*Xph<>"[k % 12] for k, m in enumerate(methods)}
    finite = [x for xs in rat.values() for x in xs if math.isfinite(x)]
    top = max(finite + [1.01])
    taus = [top ** (k / 400) for k in range(401)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in methods:
        xs = rat[m]
        ax.step(taus, [sum(1 for x in xs if x <= t) / len(xs) for t in taus], where="post", label=m, **style[m])
    ax.set_xscale("log")
    ax.set_xlabel("objective / best on the instance (tau, log scale)")
    ax.set_ylabel("share of instances within tau")
    ax.set_title("Performance profile (Dolan-More)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "profile.png", dpi=110)
    plt.close(fig)

    groups = _group(rows)
    best: dict[tuple[str, float, int], float] = {}
    for k, rs in groups.items():
        ok = [r["objective"] for r in rs if r.get("valid") and r.get("objective") is not None]
        if ok:
            best[k] = min(ok)

    def key(r: dict[str, Any]) -> tuple[str, float, int]:
        return (r["instance"], float(r["time_limit_s"]), int(r["seed"]))

    def scatter(points: Any, title: str, xlabel: str, ylabel: str, logy: bool, name: str) -> None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for m in methods:
            pts = points(m)
            if pts:
                ax.scatter(
                    [p[0] for p in pts], [p[1] for p in pts], s=16, label=m, color=style[m]["color"], marker=marker[m]
                )
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)

    scatter(
        lambda m: [
            (max(float(r["wall_s"]), 1e-3), r["objective"] / best[key(r)])
            for r in rows
            if r["method"] == m and r.get("valid") and r.get("objective") is not None and key(r) in best
        ],
        "Objective against time",
        "wall time (s)",
        "objective / best",
        False,
        "objective_vs_time.png",
    )
    scatter(
        lambda m: [
            (r.get("gpus") or 1, max(float(r.get("wall_s") or 0), 1e-3))
            for r in rows
            if r["method"] == m and r.get("gpus")
        ],
        "Time against instance size",
        "free GPUs in the instance",
        "wall time (s)",
        True,
        "time_vs_size.png",
    )

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
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
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
                "gap_median": statistics.median(gaps)
                if (gaps := [g for r in rs if (g := proven_gap(r)) is not None])
                else None,
                "gap_runs": len(gaps),
            }
        )
    return out


def proven_gap(r: dict[str, Any]) -> float | None:
    """``objective / bound - 1`` of a run with a valid placement and a positive bound (the
    bound is valid for the true objective: the driver reports no other)."""
    o, b = r.get("objective"), r.get("bound")
    if not r.get("valid") or o is None or b is None or b <= 0:
        return None
    return max(0.0, float(o) / float(b) - 1.0)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.3g}%"


def _ratio(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.4f}"


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
        "| method | runs | solved | optimal | failed | refused | time SGM (s, shift 1) | objective / best (GM) | wins | proven gap (median, runs with a bound) | peak MB | share of excess removed by auto |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        rem = "-" if s["auto_removes"] is None else f"{100 * s['auto_removes']:.1f}%"
        gap = "-" if s["gap_median"] is None else f"{_pct(s['gap_median'])} ({s['gap_runs']})"
        lines.append(
            f"| {s['method']} | {s['runs']} | {s['solved']} | {s['optimal']} | {s['failed']} | {s['refused']} | "
            f"{s['time_sgm_s']:.3f} | {_ratio(s['objective_gm_ratio'])} | {s['wins']} | {gap} | {s['peak_mem_mb']:.0f} | {rem} |"
        )
    lines += [
        "",
        "Solved: a valid placement (with `best_effort`, of the most weight any method placed). Objective / best: "
        "geometric mean over instances of the objective over the best any method reached (unsolved runs at twice "
        "the worst ratio seen). Proven gap: objective / the run's own valid lower bound - 1. Share of excess "
        "removed by auto: for the slowdown-oblivious baselines, the mean of (baseline - auto) / (baseline - ideal "
        "lower bound), the ideal bound being the all-slowdowns-1 lower bound.",
        "",
        "![performance profile](profile.png)",
        "![objective against time](objective_vs_time.png)",
        "![time against size](time_vs_size.png)",
        "",
    ]
    lines += per_instance_table(rows)
    lines += gap_table(rows)
    (out / "report.md").write_text("\n".join(lines))
    _plots(rows, out)
    from placement.visual.report import html_report

    html_report("Comparison report", "\n".join(lines), out, worst_jobs_html(rows))


WORST_JOBS = 5
"""Jobs explained per instance in ``report.html``: the largest straggler penalties."""

EXPLAIN_UP_TO = 2000
"""Instances explained in ``report.html`` up to this many servers (an explanation costs a few
seconds per job at 4,000 servers: ``placement explain --job`` does it on demand)."""


def worst_jobs_html(rows: Sequence[dict[str, Any]]) -> str:
    """For each instance, the explanations of the worst jobs of the best valid run (whose
    placement ``runs.jsonl`` keeps)."""
    from placement.errors import PlacementError
    from placement.evaluation.evaluate import evaluate
    from placement.evaluation.explain import explain, summary_rows
    from placement.instances import resolve_instance
    from placement.model import Solution, Status
    from placement.visual.report import explanation_table

    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.get("valid") and r.get("assignment") is not None and r.get("objective") is not None:
            b = best.get(r["instance"])
            if b is None or (r.get("placed_weight") or 0, -r["objective"]) > (
                b.get("placed_weight") or 0,
                -b["objective"],
            ):
                best[r["instance"]] = r
    parts = ["<h2>Why the worst jobs wait</h2>"] if best else []
    for name, r in sorted(best.items()):
        try:
            inst = resolve_instance(name)
        except PlacementError:
            continue
        sol = Solution(
            inst.name,
            r["method"],
            Status(r["status"]),
            r["objective"],
            r.get("bound"),
            r["assignment"],
            tuple(j.id for j in inst.jobs if j.id not in r["assignment"]),
            {},
            {},
            r.get("shards") or {},
            r.get("stages") or {},
        )
        caption = f"{name}: {r['method']} (objective {r['objective']:,.2f}), times in ms"
        if len(inst.servers) > EXPLAIN_UP_TO:
            parts.append(
                f"<p>{caption}: {len(inst.servers):,} servers, not explained here (more than {EXPLAIN_UP_TO:,}); "
                "<code>placement explain SOLUTION --instance INSTANCE --job ID</code> explains one job.</p>"
            )
            continue
        reports = evaluate(inst, sol.assignment, sol.shards, sol.stages, sol.gpus).jobs
        worst = sorted(reports, key=lambda j: reports[j].ideal_iteration_ms - reports[j].expected_iteration_ms)[
            :WORST_JOBS
        ]
        ex = explain(inst, sol, jobs=worst)  # one validation and one evaluation for all of them
        parts.append(explanation_table(caption, summary_rows(ex)))
    return "\n".join(parts)


def _instance_table(
    rows: Sequence[dict[str, Any]],
    title: str,
    caption: str,
    cell: Callable[[dict[str, Any], list[dict[str, Any]]], str],
) -> list[str]:
    """Markdown: one row per (instance, limit, seed), one column per method; ``cell(run,
    runs of its row)`` writes a run that has a placement, its status stands otherwise."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    lines = [
        "",
        f"## {title}",
        "",
        caption,
        "",
        "| instance | limit s | seed | " + " | ".join(methods) + " |",
        "|---|---|---|" + "---|" * len(methods),
    ]
    for (inst, limit, seed), rs in sorted(_group(rows).items()):
        by = {r["method"]: r for r in rs}
        cells = []
        for m in methods:
            r = by.get(m)
            if r is None:
                cells.append("")
            elif r.get("valid") and r.get("objective") is not None:
                cells.append(cell(r, rs))
            else:
                cells.append(str(r.get("status")))
        lines.append(f"| {inst} | {limit:g} | {seed} | " + " | ".join(cells) + " |")
    return lines


def per_instance_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown: the objective of every method on every (instance, limit, seed), the best in
    bold; a run without a placement shows its status."""

    def objective(r: dict[str, Any], rs: list[dict[str, Any]]) -> str:
        best = min(x["objective"] for x in rs if x.get("valid") and x.get("objective") is not None)
        text = f"{r['objective']:.6g}"
        return f"**{text}**" if r["objective"] <= best * (1 + REPORT_RTOL) else text

    return _instance_table(
        rows, "Per instance", "Objective (bold: the best on the row); otherwise the run's status.", objective
    )


def gap_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown: every run's proven gap (objective / its own bound - 1), ``optimal`` for a
    proven optimum, ``-`` without a bound, or the status of a run without a placement."""

    def gap(r: dict[str, Any], rs: list[dict[str, Any]]) -> str:
        return "optimal" if r.get("status") == RunState.OPTIMAL else _pct(proven_gap(r))

    return _instance_table(
        rows, "Proven gap per instance", "Objective over the run's own valid lower bound, minus 1.", gap
    )


def _plots(rows: Sequence[dict[str, Any]], out: Path) -> None:
    """The three plots, drawn for a reader who never saw the code: strong colours (ten hues,
    then the same hues dashed), plain tick labels, legends outside the data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rat = ratios(rows)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    cmap = plt.get_cmap("tab10")
    style: dict[str, dict[str, Any]] = {
        m: dict(color=cmap(k % 10), linestyle=("-", "--", ":")[(k // 10) % 3]) for k, m in enumerate(methods)
    }
    marker = {m: "os^vDP*Xph<>"[k % 12] for k, m in enumerate(methods)}
    plain = FuncFormatter(lambda x, _: f"{x:g}")

    # performance profile on the excess over the best (%), symmetric-log so that 0.1% and 100% both show
    finite = [100 * (x - 1) for xs in rat.values() for x in xs if math.isfinite(x)]
    top = max(finite + [1.0]) * 1.2
    grid = sorted({0.0, *(top * (k / 400) ** 3 for k in range(401)), *finite})
    fig, ax = plt.subplots(figsize=(10, 5))
    for m in methods:
        xs = [100 * (x - 1) if math.isfinite(x) else math.inf for x in rat.get(m, [])]
        if not xs:
            continue
        ax.step(
            grid,
            [sum(1 for x in xs if x <= t + 1e-9) / len(xs) for t in grid],
            where="post",
            label=m,
            linewidth=1.8,
            **style[m],
        )
    ax.set_xscale("symlog", linthresh=0.1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}%"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(-0.01, top)
    ax.set_ylim(-0.02, 1.06)
    ax.set_xlabel("objective above the best any method reached on the instance (%, symmetric log scale)")
    ax.set_ylabel("share of instances within that excess")
    ax.set_title("Performance profile (Dolan-More): higher and further left is better")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
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

    # objective against time: one panel per instance, named
    instances = sorted({r["instance"] for r in rows if r.get("valid") and key(r) in best})
    if instances:
        cols = min(4, len(instances))
        nrows = math.ceil(len(instances) / cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols + 2.2, 2.8 * nrows), squeeze=False)
        for ax, inst in zip(axes.flat, instances):
            for m in methods:
                pts = [
                    (max(float(r["wall_s"]), 1e-3), 100 * (r["objective"] / best[key(r)] - 1))
                    for r in rows
                    if r["instance"] == inst and r["method"] == m and r.get("valid") and key(r) in best
                ]
                if pts:
                    ax.scatter(
                        [p[0] for p in pts],
                        [p[1] for p in pts],
                        s=22,
                        color=style[m]["color"],
                        marker=marker[m],
                        label=m,
                    )
            ax.set_xscale("log")
            ax.set_yscale("symlog", linthresh=0.1)
            ax.xaxis.set_major_formatter(plain)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}%"))
            ax.set_ylim(bottom=-0.02)
            ax.set_title(inst, fontsize=9)
            ax.grid(True, alpha=0.3)
        for ax in list(axes.flat)[len(instances) :]:
            ax.axis("off")
        for ax in axes[-1]:
            ax.set_xlabel("wall time (s)")
        for ax in axes[:, 0]:
            ax.set_ylabel("above best")
        handles = [
            plt.Line2D([], [], color=style[m]["color"], marker=marker[m], linestyle="", label=m) for m in methods
        ]
        fig.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.suptitle("Objective against time, per instance (lower left is better)")
        fig.tight_layout()
        fig.savefig(out / "objective_vs_time.png", dpi=110, bbox_inches="tight")
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 5))
    for m in methods:
        pts = [
            (r.get("gpus") or 1, max(float(r.get("wall_s") or 0), 1e-3))
            for r in rows
            if r["method"] == m and r.get("gpus") and r.get("status") != RunState.REFUSED
        ]
        if pts:
            ax.scatter(
                [p[0] for p in pts], [p[1] for p in pts], s=22, label=m, color=style[m]["color"], marker=marker[m]
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({int(r["gpus"]) for r in rows if r.get("gpus")})
    if len(sizes) <= 12:  # the instances' own sizes as ticks (a decade may hold them all)
        ax.set_xticks(sizes)
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel("free GPUs in the instance")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Time against instance size")
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # no run timed (every one failed): no legend
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out / "time_vs_size.png", dpi=110)
    plt.close(fig)

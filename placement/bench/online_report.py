"""The proactive loop's benchmark, written: ``online.md`` (per cell every configuration by
percentile and size class, the paired effects, the shares of straggler inflation removed),
``grid.md`` (each candidate against consolidation, cell by cell, and its worst cell per goal),
``online.json`` and ``online.png``.  The runs and the statistics are :mod:`placement.bench.online`'s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from placement.simulation.config import SIZE_CLASSES

__all__ = ["write_report", "grid_table", "GRID_REFERENCES"]


def _ci(x: Any, pct: bool = False, nd: int = 0) -> str:
    if not x:
        return "-"
    m, lo, hi = x
    if pct:
        return f"{100 * m:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    return f"{m:,.{nd}f} [{lo:,.{nd}f}, {hi:,.{nd}f}]"


def write_report(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "online.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        f"Seeds {', '.join(map(str, result['seeds']))}; re-plan price `{result['replan_price']}`"
        + "".join(f"; `{k}` {v}" for k, v in result.get("extra", {}).items())
        + "; "
        "each figure is the mean over seeds [95% bootstrap interval]; times in seconds.",
        "",
    ]
    for cname, cell in result["cells"].items():
        infl = cell["consolidation_inflation"]
        lines += [f"## {cname}", "", f"Consolidation's straggler inflation: {_ci(infl, pct=True)}", ""]
        lines += [
            "| configuration | seeds | mean JCT | p50 JCT | p95 JCT | p99 JCT "
            "| top 1% share | migrations | restart GPU-h | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for config, st in cell["configs"].items():
            lines.append(
                f"| {config} | {len(st['seeds'])} | {_ci(st['avg_jct_s'])} | {_ci(st['p50_jct_s'])} | "
                f"{_ci(st['p95_jct_s'])} | {_ci(st['p99_jct_s'])} | {_ci(st['top1pct_jct_share'], nd=3)} | "
                f"{_ci(st['migrations'])} | {_ci(st['restart_gpu_hours'], nd=1)} | {_ci(st['wall_s'])} |"
            )
        lines += ["", _size_table(cell)]
        lines += ["", "| effect | compared | metric | paired change | seeds |", "|---|---|---|---|---|"]
        for e in cell["effects"]:
            lines.append(
                f"| {e['effect']} | {e['new']} / {e['base']} | {e['metric']} | {_ci(e['change'], pct=True)} | {e['seeds']} |"
            )
        if cell.get("inflation_removed"):
            lines += [
                "",
                "Share of oblivious knowledge's straggler inflation with re-planning (`defrag` - `defrag-none`) "
                "that each removes, per seed: "
                + "; ".join(f"`{c}` {_ci(v, pct=True)}" for c, v in cell["inflation_removed"].items() if v),
            ]
        if cell.get("consolidation_inflation_removed"):
            lines += [
                "",
                "Share of consolidation's straggler inflation (`consolidate` - `consolidate-none`) that each removes, "
                "per seed (above 100%: it also cuts what consolidation pays without stragglers, its spread "
                "placements' communication): "
                + "; ".join(
                    f"`{c}` {_ci(v, pct=True)}" for c, v in cell["consolidation_inflation_removed"].items() if v
                ),
            ]
        lines.append("")
    (out / "online.md").write_text("\n".join(lines))
    if any(c.startswith("grid-") for c in result["cells"]):
        (out / "grid.md").write_text(grid_table(result))
    _plot(result, out / "online.png")


def _mean(x: Any) -> str:
    return "-" if not x else f"{x[0]:,.0f}"


def _size_table(cell: dict[str, Any]) -> str:
    """Mean JCT per size class (GPUs) and its split, mean over seeds: ``JCT (queue + run)``."""
    head = " | ".join(f"{lo}{'' if hi == lo else ('+' if hi is None else f'-{hi}')} GPUs" for _, lo, hi in SIZE_CLASSES)
    lines = [
        f"| configuration | {head} |",
        "|---|" + "---|" * len(SIZE_CLASSES),
    ]
    for config, st in cell["configs"].items():
        parts = []
        for name, _, _ in SIZE_CLASSES:
            jct = st.get(f"avg_jct_{name}_s")
            n = st.get(f"jobs_{name}")
            parts.append(
                "-"
                if not jct
                else f"{_mean(jct)} ({_mean(st.get(f'avg_queue_{name}_s'))} + {_mean(st.get(f'avg_run_{name}_s'))}), "
                f"{n[0]:.0f} jobs"
            )
        lines.append(f"| {config} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


GRID_REFERENCES = (
    "consolidate",
    "consolidate-none",
    "clairvoyant",
    "clairvoyant-replay",
    "clairvoyant-replay-oracle",
    "hindsight",
)
"""The grid's references; every other configuration run on it is a candidate (a set of
defaults) judged by its worst cell."""


def grid_table(result: dict[str, Any]) -> str:
    """The grid's table (``grid.md``): per cell, consolidation's mean JCT and straggler
    inflation and the clairvoyant reference's change and share of that inflation removed; per
    candidate (every other configuration) its paired change of mean and p99 JCT against
    consolidation, the share of the inflation it removes and the one-GPU jobs' mean queueing;
    then each candidate's worst cell for every goal, side by side."""
    cells = result["cells"]
    candidates = list(
        dict.fromkeys(
            c
            for cell in cells.values()
            for c in cell["configs"]
            if c not in GRID_REFERENCES and not c.endswith("-none")
        )
    )
    lines = [
        "| cell | jobs | consolidation mean JCT | inflation | clairvoyant: mean | removed | on the loop's starts: removed "
        "| references' run time / best | 1-GPU queue "
        + "".join(f"| {c}: mean | p99 | removed | own inflation | 1-GPU queue " for c in candidates)
        + "|",
        "|---|---|---|---|---|---|---|---|---|" + "---|---|---|---|---|" * len(candidates),
    ]
    worst: dict[str, dict[str, tuple[float, str]]] = {c: {} for c in candidates}
    refs: dict[str, tuple[float, str]] = {}

    def note(config: str, key: str, value: float | None, cname: str, higher_is_worse: bool = True) -> None:
        if value is None:
            return
        v = value if higher_is_worse else -value
        if key not in worst[config] or v > worst[config][key][0]:
            worst[config][key] = (v, cname)

    for cname, cell in cells.items():
        cf = cell["configs"]
        cons = cf.get("consolidate", {})
        vs = cell.get("vs_consolidation", {})
        rem = cell.get("consolidation_inflation_removed", {})
        row = (
            f"| {cname} | {_mean(cons.get('jobs'))} | {_mean(cons.get('avg_jct_s'))} "
            f"| {_ci(cell['consolidation_inflation'], pct=True)} "
            f"| {_ci(vs.get('clairvoyant', {}).get('avg_jct_s'), pct=True)} | {_ci(rem.get('clairvoyant'), pct=True)} "
            f"| {_ci(rem.get('clairvoyant-replay'), pct=True)} "
            f"| {', '.join(f'{r} {v:.3f}' for r, v in cell.get('run_time_vs_best', {}).items()) or '-'} "
            f"| {_mean(cons.get('avg_queue_w1_s'))} "
        )
        for r, v in cell.get("run_time_vs_best", {}).items():
            bound = refs.setdefault(r, (v, cname))
            if v > bound[0]:
                refs[r] = (v, cname)
        own = cell.get("own_inflation", {})
        clair = rem.get("clairvoyant")
        for c in candidates:
            mean, p99 = vs.get(c, {}).get("avg_jct_s"), vs.get(c, {}).get("p99_jct_s")
            row += (
                f"| {_ci(mean, pct=True)} | {_ci(p99, pct=True)} | {_ci(rem.get(c), pct=True)} "
                f"| {_ci(own.get(c), pct=True)} | {_mean(cf.get(c, {}).get('avg_queue_w1_s'))} "
            )
            if own.get(c) and cell["consolidation_inflation"]:
                note(
                    c,
                    "own straggler inflation over consolidation's",
                    own[c][0] - cell["consolidation_inflation"][0],
                    cname,
                )
            note(c, "mean JCT / consolidation's, upper end of the interval", mean[2] if mean else None, cname)
            note(c, "p99 JCT / consolidation's", p99[0] if p99 else None, cname)
            if rem.get(c) and clair and clair[0] >= 0.3:
                note(c, "its removal over clairvoyant's (where that is >= 30%)", rem[c][0] / clair[0], cname, False)
            q0, q1 = cons.get("avg_queue_w1_s"), cf.get(c, {}).get("avg_queue_w1_s")
            if q0 and q1 and q0[0] > 0:
                note(c, "1-GPU jobs' mean queueing / consolidation's", q1[0] / q0[0] - 1, cname)
        lines.append(row + "|")
    if refs:
        lines += [
            "",
            "References on run time (JCT less queueing, mean over seeds) over the better of oracle knowledge's "
            "and the loop's, worst cell: "
            + "; ".join(f"`{r}` {v:.3f} ({c})" for r, (v, c) in refs.items())
            + ". Knowing more makes every job run faster; the queueing (who starts when) it does not bound.",
        ]
    lines += ["", "Worst cell of each candidate, per goal (mean over seeds; changes against consolidation):", ""]
    for c in candidates:
        parts = []
        for key, (v, cname) in worst[c].items():
            shown = -v if "removal" in key else v
            parts.append(f"{key} {100 * shown:.0f}%" if "removal" in key else f"{key} {100 * shown:+.1f}%")
            parts[-1] += f" ({cname})"
        lines.append(f"- `{c}`: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def _plot(result: dict[str, Any], path: Path) -> None:
    """Mean JCT of every configuration with its interval, one panel per cell, and the
    migrations beside each bar (``online.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = result["cells"]
    if not cells:
        return
    fig, axes = plt.subplots(1, len(cells), figsize=(6.5 * len(cells), 4.2), squeeze=False)
    for ax, (cname, cell) in zip(axes[0], cells.items()):
        names = [c for c, st in cell["configs"].items() if st.get("avg_jct_s")]
        means = [cell["configs"][c]["avg_jct_s"][0] for c in names]
        lo = [m - cell["configs"][c]["avg_jct_s"][1] for m, c in zip(means, names)]
        hi = [cell["configs"][c]["avg_jct_s"][2] - m for m, c in zip(means, names)]
        y = np.arange(len(names))[::-1]
        ax.barh(y, means, xerr=[lo, hi], color=["#888" if "none" in c else "#4477aa" for c in names], capsize=3)
        for yi, c, m, up in zip(y, names, means, hi):
            mig = cell["configs"][c].get("migrations")
            if mig and mig[0]:
                ax.text(m + up, yi, f"  {mig[0]:,.0f} moves", va="center", fontsize=8)
        ax.set_yticks(y, names)
        ax.set_xlabel("mean JCT (s), 95% bootstrap interval over seeds")
        ax.set_title(cname, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

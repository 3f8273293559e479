"""A sweep's folder outputs, written from its rows (``runs.jsonl``): ``summary.json``,
``report.md`` and ``report.html`` (the inflation table, the means, each run's worst jobs), and
the plots (JCT distribution, queue and utilisation over time, the servers).  Split from
:mod:`placement.simulation.runner`, which runs the sweep."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placement.simulation.config import PLAN_BY, SUMMARY_FIELDS

__all__ = ["inflation_table", "knowledge_label", "mean_table", "write_outputs"]


def inflation_table(
    rows: Sequence[dict[str, Any]], baseline: tuple[str, str] = ("consolidate", "oblivious")
) -> list[dict[str, Any]]:
    """Per finished run with stragglers: its inflation (mean JCT minus the mean JCT of the
    same method and seed with ``dynamics none``) and the share of the baseline's inflation
    it removes: ``(JCT_baseline - JCT) / (JCT_baseline - JCT_none(baseline))``."""
    ok = [r for r in rows if r.get("status") == "finished"]
    ref = {(r["method"], r["seed"]): r["avg_jct_s"] for r in ok if r["dynamics"] == "none"}
    base = {
        (r["dynamics"], r["seed"]): r["avg_jct_s"]
        for r in ok
        if (r["method"], r["knowledge"]) == baseline and r["dynamics"] != "none"
    }
    out = []
    for r in ok:
        if r["dynamics"] == "none":
            continue
        none = ref.get((r["method"], r["seed"]))
        b = base.get((r["dynamics"], r["seed"]))
        b_none = ref.get((baseline[0], r["seed"]))
        share = None
        if b is not None and b_none is not None and b - b_none > 0:
            share = (b - r["avg_jct_s"]) / (b - b_none)
        out.append(
            {
                "label": r["label"],
                "method": r["method"],
                "knowledge": knowledge_label(r),
                "dynamics": r["dynamics"],
                "seed": r["seed"],
                "avg_jct_s": r["avg_jct_s"],
                "inflation_s": None if none is None else r["avg_jct_s"] - none,
                "share_removed": share,
            }
        )
    return out


def knowledge_label(r: dict[str, Any]) -> str:
    """The knowledge column: with how the decisions used it when not the default view
    (``PLAN_BY[0]``, forecasts)."""
    pb = r.get("plan_by", PLAN_BY[0])
    return r["knowledge"] if pb in (None, PLAN_BY[0]) else f"{r['knowledge']} (by {pb})"


def mean_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows: each (method, knowledge, dynamics) averaged over its seeds."""
    infl = {r["label"]: r for r in inflation_table(rows)}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("status") == "finished":
            groups.setdefault((r["method"], knowledge_label(r), r["dynamics"]), []).append(r)

    def mean(xs: list[Any]) -> float | None:
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None

    out = [
        "| method | knowledge | dynamics | seeds | mean JCT | p99 JCT | mean queue | GPU util | mean slowdown | "
        "straggled iters | inflation | share removed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (m, k, d), rs in groups.items():
        share = mean([infl.get(r["label"], {}).get("share_removed") for r in rs])
        out.append(
            f"| {m} | {k} | {d} | {len(rs)} | {_fmt(mean([r['avg_jct_s'] for r in rs]), 0)} | "
            f"{_fmt(mean([r['p99_jct_s'] for r in rs]), 0)} | {_fmt(mean([r['avg_queue_s'] for r in rs]), 0)} | "
            f"{100 * (mean([r['gpu_utilization'] for r in rs]) or 0):.1f}% | {mean([r['avg_slowdown'] for r in rs]):.4f} | "
            f"{100 * (mean([r['straggled_iteration_fraction'] for r in rs]) or 0):.1f}% | "
            f"{_fmt(mean([infl.get(r['label'], {}).get('inflation_s') for r in rs]), 0)} | "
            f"{'-' if share is None else f'{100 * share:.1f}%'} |"
        )
    return out


def _fmt(x: Any, nd: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return str(x)


def write_outputs(rows: Sequence[dict[str, Any]], out: Path) -> None:
    """``summary.json`` (one object per configuration), ``report.md`` and the plots."""
    summary = [
        {k: r.get(k) for k in ("label", "status", *SUMMARY_FIELDS, "error") if k in r or k in SUMMARY_FIELDS}
        for r in rows
    ]
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    infl = {r["label"]: r for r in inflation_table(rows)}
    first = next((r for r in rows if r.get("trace_source")), {})
    lines = [
        "# Simulation report",
        "",
        f"Cluster `{first.get('cluster', '?')}`; trace: {first.get('trace_source', '?')}. "
        f"{len(rows)} configurations. Times in seconds; JCT = end - submit; inflation = mean JCT minus the same "
        "method's mean JCT with `dynamics none`; share removed = the part of oblivious consolidation's inflation "
        "that the configuration removes.",
        "",
        "| method | knowledge | dynamics | seed | finished | mean JCT | p50 JCT | p99 JCT | mean queue | p99 queue | "
        "GPU util | mean slowdown | straggled iters | migrations | inflation | share removed | decision p50 / max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("status") != "finished":
            lines.append(
                f"| {r.get('method')} | {r.get('knowledge')} | {r.get('dynamics')} | {r.get('seed')} | "
                f"{r.get('status')}: {r.get('error', '')} |" + " |" * 12
            )
            continue
        i = infl.get(r["label"], {})
        share = i.get("share_removed")
        lines.append(
            f"| {r['method']} | {knowledge_label(r)} | {r['dynamics']} | {r['seed']} | {r['jobs_finished']}/{r['jobs']} | "
            f"{_fmt(r['avg_jct_s'])} | {_fmt(r['p50_jct_s'])} | {_fmt(r['p99_jct_s'])} | {_fmt(r['avg_queue_s'])} | "
            f"{_fmt(r['p99_queue_s'])} | {100 * r['gpu_utilization']:.1f}% | {r['avg_slowdown']:.4f} | "
            f"{100 * r['straggled_iteration_fraction']:.1f}% | {r['migrations']} | {_fmt(i.get('inflation_s'))} | "
            f"{'-' if share is None else f'{100 * share:.1f}%'} | "
            f"{r['decision_time_p50_s'] * 1000:.1f} ms / {r['decision_time_max_s']:.2f} s |"
        )
    lines += [
        "",
        "Mean over seeds:",
        "",
        *mean_table(rows),
        "",
        "![JCT CDF](jct_cdf.png)",
        "![queue and utilisation](timeline.png)",
        "",
    ]
    shown = _servers_picture(rows, out)
    if shown:
        lines += [
            f"Servers over time, `{shown}` (every configuration's in `servers/`):",
            "",
            "![servers](servers.png)",
            "",
        ]
    (out / "report.md").write_text("\n".join(lines))
    _plots([r for r in rows if r.get("status") == "finished"], out)
    from placement.visual.report import html_report

    html_report("Simulation report", "\n".join(lines), out, _worst_jobs_html(out, shown))


WORST_JOBS = 10
"""Jobs shown in ``report.html``: those that lost the most time to stragglers."""


def _worst_jobs_html(out: Path, label: str | None) -> str:
    """The jobs of configuration ``label`` that lost the most time to stragglers (run time
    minus straggler-free run time), with their placement, as an HTML table."""
    import html

    path = out / "jobs" / f"{label}.csv"
    if label is None or not path.exists():
        return ""
    with open(path, newline="") as f:
        jobs = list(csv.DictReader(f))
    lost = sorted(jobs, key=lambda j: -(float(j["run_s"]) - float(j["ideal_run_s"])))[:WORST_JOBS]
    cols = ("job", "workers", "jct_s", "queue_s", "run_s", "ideal_run_s", "slowdown", "moves", "placement")
    head = "".join(
        f"<th>{c}</th>"
        for c in ("job", "GPUs", "JCT s", "queue s", "run s", "straggler-free run s", "slowdown", "moves", "servers")
    )
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(j.get(c, '')))}</td>" for c in cols) + "</tr>" for j in lost
    )
    return (
        f"<h2>The jobs stragglers cost most, in {html.escape(label)}</h2>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
    )


def _cell(text: str) -> str:
    try:
        v = float(text)
    except ValueError:
        return text
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _servers_picture(rows: Sequence[dict[str, Any]], out: Path) -> str | None:
    """``servers.png``: the servers-over-time picture of the first finished configuration with
    stragglers (else the first finished one); returns its label."""
    import shutil

    done = [r for r in rows if r.get("status") == "finished" and (out / "servers" / f"{r['label']}.png").exists()]
    pick = next((r for r in done if r.get("dynamics") != "none"), done[0] if done else None)
    if pick is None:
        return None
    shutil.copyfile(out / "servers" / f"{pick['label']}.png", out / "servers.png")
    return str(pick["label"])


def _plots(rows: Sequence[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if not rows:
        return
    all_rows = rows
    first_seed = min(r["seed"] for r in rows)
    rows = [r for r in rows if r["seed"] == first_seed]  # one line per configuration in the curves
    cmap = plt.get_cmap("tab10")
    wide = len(rows) > 8
    fig, ax = plt.subplots(figsize=(12 if wide else 8, 5))
    for k, r in enumerate(rows):
        p = out / "jobs" / f"{r['label']}.csv"
        if not p.exists():
            continue
        with open(p, newline="") as f:
            jct = np.sort([float(x["jct_s"]) for x in csv.DictReader(f)])
        if len(jct):
            ax.step(
                jct,
                np.arange(1, len(jct) + 1) / len(jct),
                where="post",
                label=r["label"],
                color=cmap(k % 10),
                linestyle=("-", "--", ":", "-.")[(k // 10) % 4],
                linewidth=1.6,
            )
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s, log scale)")
    ax.set_ylabel("share of jobs finished within")
    ax.set_title(f"JCT distribution per configuration (seed {first_seed})")
    ax.grid(True, which="both", alpha=0.3)
    if not ax.get_legend_handles_labels()[0]:
        pass  # no run drawn (none finished with jobs): no legend to say so
    elif wide:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "jct_cdf.png", dpi=110)
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12 if wide else 8, 6), sharex=True)
    for k, r in enumerate(rows):
        p = out / "timeline" / f"{r['label']}.csv"
        if not p.exists():
            continue
        with open(p, newline="") as f:
            tl = list(csv.DictReader(f))
        t = np.array([float(x["time_s"]) for x in tl]) / 3600.0
        style = dict(color=cmap(k % 10), linestyle=("-", "--", ":", "-.")[(k // 10) % 4], linewidth=1.2)
        a1.step(t, [float(x["queued"]) for x in tl], where="post", label=r["label"], **style)
        a2.step(t, [float(x["used_gpus"]) for x in tl], where="post", **style)
    a1.set_ylabel("jobs queued")
    a2.set_ylabel("GPUs in use")
    a2.set_xlabel("simulated time (hours)")
    a1.set_title(f"Queue and utilisation over time (seed {first_seed})")
    a1.grid(True, alpha=0.3)
    a2.grid(True, alpha=0.3)
    if not a1.get_legend_handles_labels()[0]:
        pass  # no timeline read (the runs were resumed from another folder's rows)
    elif wide:
        a1.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        a1.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "timeline.png", dpi=110)
    plt.close(fig)

    infl = inflation_table(all_rows)
    keys = list(dict.fromkeys((r["method"], r["knowledge"]) for r in infl))
    if keys and any(r["share_removed"] is not None for r in infl):
        dyn = sorted({r["dynamics"] for r in infl})
        fig, ax = plt.subplots(figsize=(9, 0.3 * len(keys) * len(dyn) + 1.8))
        labels, vals = [], []
        for d in dyn:
            for m, k in keys:
                xs = [
                    r["share_removed"]
                    for r in infl
                    if (r["method"], r["knowledge"], r["dynamics"]) == (m, k, d) and r["share_removed"] is not None
                ]
                if xs:
                    labels.append(f"{m} / {k}" + (f" / {d}" if len(dyn) > 1 else ""))
                    vals.append(100 * sum(xs) / len(xs))
        y = np.arange(len(vals))
        ax.barh(y, vals, color=[cmap(0) if v >= 0 else cmap(3) for v in vals])
        ax.set_yticks(y, labels, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlabel("share of oblivious consolidation's inflation removed (%, mean over seeds)")
        ax.set_title("Inflation removed (negative: more inflation than oblivious consolidation)")
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "inflation.png", dpi=110)
        plt.close(fig)

"""Pictures of a placement: the cluster drawn by its bandwidth domains (racks side by side, their
servers stacked), each server's GPUs coloured by the job holding them, each server shaded by its
expected slowdown E[S], hot servers outlined, the jobs with the largest straggler penalty in the
legend with their E[T] (every figure from the evaluator).  PNG and SVG by matplotlib; HTML by
plotly, one self-contained file (plotly.js inside) with each server's details on hover.

Up to :data:`GPU_CELLS_UP_TO` servers, every GPU is a cell; beyond, every server is one cell
coloured by the job holding most of its GPUs, and the largest jobs are labelled where they sit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from placement.evaluation.evaluate import evaluate
from placement.model.records import Instance, Solution
from placement.problem.topology import cluster_of

__all__ = ["show", "FORMATS", "GPU_CELLS_UP_TO", "HOT"]

FORMATS = (".png", ".svg", ".html")
GPU_CELLS_UP_TO = 512
"""Servers drawn GPU by GPU up to this many; beyond, one cell per server."""
HOT = 0.2
"""A server is outlined as hot when it is slow (above its lowest value) at least this often."""
LEGEND_JOBS = 12
"""Jobs named in the legend: those with the largest straggler penalty."""


@dataclass
class _Grid:
    racks: list[list[str]]
    pods: list[int]
    """Per rack, the domain above it (its pod; -1 when the rack is the top domain)."""
    """Server ids, rack by rack (innermost bandwidth domains, in the order of their parents)."""
    mean: dict[str, float]
    p_slow: dict[str, float]
    gpus: dict[str, list[str | None]]
    """Per server, per GPU: the job holding it, ``"(in use)"`` for GPUs running jobs hold, or None."""
    expected: dict[str, float]
    penalty: dict[str, float]
    factors: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Per server with per-GPU factors, each GPU's factor for the holding job's class (for every
    class on a free GPU)."""


def _slowdown_figures(instance: Instance) -> tuple[dict[str, float], dict[str, float]]:
    mean: dict[str, float] = {}
    p_slow: dict[str, float] = {}
    scen = instance.scenarios
    for s in instance.servers:
        if scen is not None:
            row = np.asarray(scen.slowdowns.get(s.id, (1.0,) * scen.count), dtype=float)
            probs = np.asarray(scen.probs, dtype=float)
            mean[s.id] = float(probs @ row)
            p_slow[s.id] = float(probs[row > row.min()].sum())
        else:
            v, p = np.asarray(s.slowdown.values), np.asarray(s.slowdown.probs)
            mean[s.id] = s.slowdown.mean()
            p_slow[s.id] = float(p[v > v.min()].sum())
    return mean, p_slow


def _grid(instance: Instance, solution: Solution) -> _Grid:
    cluster = cluster_of(instance)
    by_rack: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for s in instance.servers:
        chain = cluster.chain(s.id)
        by_rack[tuple(reversed(chain))].append(s.id)
    keys = sorted(by_rack)
    racks = [by_rack[k] for k in keys]
    pods = [k[-2] if len(k) >= 2 else -1 for k in keys]
    mean, p_slow = _slowdown_figures(instance)
    gpus: dict[str, list[str | None]] = {}
    for s in instance.servers:
        gpus[s.id] = [None] * s.gpus
        for g in s.held:
            gpus[s.id][g] = "(in use)"
    ev = evaluate(instance, solution.assignment, solution.shards, solution.stages, solution.gpus)
    factors: dict[str, tuple[float, ...]] = {}
    for jid, a in solution.assignment.items():
        for sid, k in a.items():
            cells = gpus[sid]
            for g in ev.gpus.get(jid, {}).get(sid, ()):  # the GPUs it holds, where they matter
                cells[g] = jid
            for _ in range(k - len(ev.gpus.get(jid, {}).get(sid, ()))):
                cells[cells.index(None)] = jid
    for s in instance.servers:
        if s.has_gpu_factors:
            job_of = instance.job_by_id
            factors[s.id] = tuple(
                s.gpu_factors(job_of[c].app_class if c is not None and c in job_of else None)[g]
                for g, c in enumerate(gpus[s.id])
            )
    expected = {j: r.expected_iteration_ms for j, r in ev.jobs.items()}
    penalty = {j: r.expected_iteration_ms - r.ideal_iteration_ms for j, r in ev.jobs.items()}
    return _Grid(racks, pods, mean, p_slow, gpus, expected, penalty, factors)


def _job_colours(jobs: list[str]) -> dict[str, tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return {j: cmap(k % 20) for k, j in enumerate(jobs)}


def _dominant(cells: list[str | None]) -> str | None:
    counts: dict[str | None, int] = defaultdict(int)
    for c in cells:
        counts[c] += 1
    jobs = {c: n for c, n in counts.items() if c not in (None, "(in use)")}
    if jobs:
        return max(jobs, key=lambda c: (jobs[c], str(c)))
    return "(in use)" if counts.get("(in use)") else None


def _draw_raster(instance: Instance, g: _Grid, path: Path, job: str | None, tails: dict[str, float]) -> None:
    """Large clusters: one pixel cell per server, racks as columns (a shade column of E[S]
    beside a column of the server's main job), wrapped into bands; the largest jobs labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    jobs = sorted(g.expected, key=lambda j: -g.penalty[j])
    colour = _job_colours(jobs)
    reds = matplotlib.colormaps["Reds"]
    top = max(g.mean.values(), default=1.0)
    tallest = max((len(r) for r in g.racks), default=1)
    per_band = max(1, math.ceil(math.sqrt(len(g.racks) * (tallest + 1) / 1.5 / 3)))
    bands = math.ceil(len(g.racks) / per_band)
    img = np.ones(((tallest + 2) * bands, per_band * 3, 4))
    where: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r, rack in enumerate(g.racks):
        b, c = divmod(r, per_band)
        for i, sid in enumerate(rack):
            y, x = b * (tallest + 2) + i, c * 3
            hot = g.p_slow[sid] >= HOT
            img[y, x] = (
                reds(0.15 + 0.8 * (g.mean[sid] - 1.0) / max(top - 1.0, 1e-9)) if g.mean[sid] > 1.0 else (1, 1, 1, 1)
            )
            if hot:
                img[y, x] = (0.8, 0.0, 0.0, 1.0)
            d = _dominant(g.gpus[sid])
            face: Any = (0.92, 0.92, 0.92, 1) if d is None else (0.55, 0.55, 0.55, 1) if d == "(in use)" else colour[d]
            if job is not None and d != job:
                face = (*face[:3], 0.2)
            img[y, x + 1] = face
            if d not in (None, "(in use)"):
                where[d].append((x + 1, y))
    fig_w = min(24.0, max(8.0, 0.05 * per_band * 3 + 5))
    fig_h = min(18.0, max(4.0, 0.05 * img.shape[0] + 1.5))
    fig, ax = plt.subplots(figsize=(fig_w, fig_h))
    ax.imshow(img, interpolation="nearest", aspect="auto")
    for j in sorted(where, key=lambda j: -len(where[j]))[:LEGEND_JOBS]:
        xs, ys = zip(*where[j])
        ax.text(float(np.median(xs)), float(np.median(ys)), j, fontsize=6, ha="center", va="center", weight="bold")
    ax.axis("off")
    shown = [j for j in jobs if job is None or j == job][:LEGEND_JOBS]
    handles = [Patch(color=colour[j], label=f"{j}: E[T] {g.expected[j]:.1f} ms (+{g.penalty[j]:.1f})") for j in shown]
    handles += [
        Patch(color=reds(0.6), label="left cell: E[S]"),
        Patch(color=(0.8, 0, 0), label=f"hot: slow {HOT:.0%}+ of the time"),
        Patch(color=(0.55, 0.55, 0.55), label="GPUs of running jobs"),
        Patch(color=(0.92, 0.92, 0.92), label="free"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    title = f"{instance.name}: {sum(len(r) for r in g.racks)} servers in {len(g.racks)} racks (columns, {per_band} per band); each server: E[S] | its main job"
    if job is not None:
        worst = max(tails, key=lambda k: tails[k]) if tails else None
        title += f"; {job} highlighted" + (f", largest tail share {worst} {tails[worst]:.2f} ms" if worst else "")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_matplotlib(instance: Instance, g: _Grid, path: Path, job: str | None, tails: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    jobs = sorted(g.expected, key=lambda j: -g.penalty[j])
    colour = _job_colours(jobs)
    n_servers = sum(len(r) for r in g.racks)
    per_gpu = n_servers <= GPU_CELLS_UP_TO
    width_of = max((len(g.gpus[s]) for r in g.racks for s in r), default=1) if per_gpu else 1
    tallest = max((len(r) for r in g.racks), default=1)
    col_w = width_of + 1.5
    fig_w = min(40.0, max(8.0, 0.18 * col_w * len(g.racks) + 4))
    fig_h = min(30.0, max(4.0, 0.16 * tallest + 2.5))
    fig, ax = plt.subplots(figsize=(fig_w, fig_h))
    reds = matplotlib.colormaps["Reds"]
    top = max(g.mean.values(), default=1.0)
    centroid: dict[str, list[tuple[float, float]]] = defaultdict(list)
    # racks side by side, a wider gap and a label where the pod (the domain above) changes
    gap = [0.0] * len(g.racks)
    for r in range(1, len(g.racks)):
        gap[r] = gap[r - 1] + (col_w if g.pods[r] != g.pods[r - 1] else 0.0)
    if len(set(g.pods)) > 1:
        for k, pod in enumerate(dict.fromkeys(g.pods)):
            first = g.pods.index(pod)
            ax.text(first * col_w + gap[first] - 1.0, tallest + 1.15, f"pod {k}", fontsize=7, va="bottom")
    for r, rack in enumerate(g.racks):
        x0 = r * col_w + gap[r]
        for i, sid in enumerate(rack):
            y = tallest - i
            shade = reds(0.15 + 0.8 * (g.mean[sid] - 1.0) / max(top - 1.0, 1e-9)) if g.mean[sid] > 1.0 else (1, 1, 1, 1)
            ax.add_patch(Rectangle((x0 - 1.0, y), 0.9, 0.9, color=shade, lw=0))
            cells = g.gpus[sid] if per_gpu else [_dominant(g.gpus[sid])]
            for k, c in enumerate(cells):
                face: Any = (
                    (0.92, 0.92, 0.92, 1) if c is None else (0.55, 0.55, 0.55, 1) if c == "(in use)" else colour[c]
                )
                alpha = 0.25 if job is not None and c != job else 1.0
                ax.add_patch(Rectangle((x0 + k, y), 0.9, 0.9, facecolor=face, alpha=alpha, lw=0))
                f = g.factors.get(sid, ())[k] if per_gpu and sid in g.factors else 1.0
                if f != 1.0:  # a GPU's own factor, where it is not the median GPU's
                    ax.text(x0 + k + 0.45, y + 0.45, f"{f:.2f}", fontsize=4, ha="center", va="center")
                if c is not None and c != "(in use)":
                    centroid[c].append((x0 + k + 0.45, y + 0.45))
            if g.p_slow[sid] >= HOT:
                ax.add_patch(Rectangle((x0 - 1.05, y - 0.05), len(cells) + 1.05, 1.0, fill=False, ec="red", lw=0.8))
            if job is not None and sid in tails:
                ax.text(x0 + len(cells) + 0.1, y + 0.45, f"{tails[sid]:.2f}", fontsize=6, va="center")
    if not per_gpu:  # label the largest jobs where they sit
        for j in sorted(centroid, key=lambda j: -len(centroid[j]))[:LEGEND_JOBS]:
            xs, ys = zip(*centroid[j])
            ax.text(float(np.mean(xs)), float(np.mean(ys)), j, fontsize=7, ha="center", va="center", weight="bold")
    ax.set_xlim(-1.5, len(g.racks) * col_w + (gap[-1] if gap else 0.0))
    ax.set_ylim(0.5, tallest + 1.5)
    ax.set_aspect("equal" if per_gpu else "auto")
    ax.axis("off")
    shown = [j for j in jobs if job is None or j == job][:LEGEND_JOBS]
    handles = [Patch(color=colour[j], label=f"{j}: E[T] {g.expected[j]:.1f} ms (+{g.penalty[j]:.1f})") for j in shown]
    handles += [
        Patch(color=reds(0.6), label="server shade: E[S]"),
        Patch(fill=False, ec="red", label=f"hot: slow {HOT:.0%}+ of the time"),
        Patch(color=(0.55, 0.55, 0.55), label="GPUs of running jobs"),
        Patch(color=(0.92, 0.92, 0.92), label="free GPUs"),
    ]
    if g.factors and per_gpu:
        handles.append(Patch(fill=False, lw=0, label="n.nn in a GPU: its factor"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    what = "one cell per GPU" if per_gpu else "one cell per server (its main job)"
    title = f"{instance.name}: {n_servers} servers in {len(g.racks)} racks, {what}"
    if job is not None:
        title += f"; {job} highlighted with each server's tail share (ms)"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_html(instance: Instance, g: _Grid, path: Path, job: str | None, tails: dict[str, float]) -> None:
    import plotly.graph_objects as go

    tallest = max((len(r) for r in g.racks), default=1)
    jobs = sorted(g.expected, key=lambda j: -g.penalty[j])
    code = {j: k + 2 for k, j in enumerate(jobs)}
    z = np.full((tallest, len(g.racks)), np.nan)
    s_mean = np.full((tallest, len(g.racks)), np.nan)
    text = [["" for _ in g.racks] for _ in range(tallest)]
    for r, rack in enumerate(g.racks):
        for i, sid in enumerate(rack):
            d = _dominant(g.gpus[sid])
            z[i, r] = 0 if d is None else 1 if d == "(in use)" else code[d]
            if job is not None and d != job:
                z[i, r] = 0
            s_mean[i, r] = g.mean[sid]
            held: dict[str, int] = defaultdict(int)
            for c in g.gpus[sid]:
                held[c or "free"] += 1
            parts = [
                f"{c}: {n} GPU(s)" + (f", E[T] {g.expected[c]:.2f} ms" if c in g.expected else "")
                for c, n in held.items()
            ]
            tail = f"<br>tail share of {job}: {tails[sid]:.3f} ms" if sid in tails else ""
            text[i][r] = (
                f"server {sid} (rack {r})<br>E[S] {g.mean[sid]:.3f}, P(slow) {g.p_slow[sid]:.3f}<br>"
                + "<br>".join(parts)
                + tail
            )
    from matplotlib.colors import to_hex

    colours = ["#ebebeb", "#8c8c8c"] + [to_hex(c) for c in _job_colours(jobs).values()]
    n = len(colours)
    scale = [[f, c] for k, c in enumerate(colours) for f in (k / n, (k + 1) / n)]
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=z,
            text=text,
            hoverinfo="text",
            colorscale=scale,
            zmin=-0.5,
            zmax=n - 0.5,
            showscale=False,
            name="jobs",
            xgap=1,
            ygap=1,
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=s_mean,
            text=text,
            hoverinfo="text",
            colorscale="Reds",
            name="E[S]",
            visible=False,
            xgap=1,
            ygap=1,
            colorbar={"title": "E[S]"},
        )
    )
    fig.update_layout(
        title=f"{instance.name}: servers by rack (hover a server for its jobs and slowdown)",
        updatemenus=[
            {
                "buttons": [
                    {"label": "jobs", "method": "update", "args": [{"visible": [True, False]}]},
                    {"label": "E[S]", "method": "update", "args": [{"visible": [False, True]}]},
                ]
            }
        ],
        yaxis={"autorange": "reversed", "title": "server in rack"},
        xaxis={"title": "rack"},
    )
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)


def show(instance: Instance, solution: Solution, path: str | Path, *, job: str | None = None) -> Path:
    """Draw ``solution`` on ``instance`` to ``path`` (``.png``, ``.svg`` or ``.html``); with
    ``job``, that job stands out with each of its servers' tail shares.  Returns the path."""
    from placement.errors import InvalidInputError
    from placement.evaluation.explain import explain

    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise InvalidInputError([f"-o {path}: the picture's format comes from its suffix, one of {', '.join(FORMATS)}"])
    g = _grid(instance, solution)
    tails: dict[str, float] = {}
    if job is not None:
        ex = explain(instance, solution, job=job)[job]
        tails = {sid: v["tail_share_ms"] for sid, v in ex["servers"].items()}
    if out.suffix.lower() == ".html":
        _draw_html(instance, g, out, job, tails)
    elif sum(len(r) for r in g.racks) > GPU_CELLS_UP_TO:
        _draw_raster(instance, g, out, job, tails)
    else:
        _draw_matplotlib(instance, g, out, job, tails)
    return out

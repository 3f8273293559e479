"""A simulation's servers over time: one row per server, time across.  The upper panel shades
the slow episodes of the hidden truth (the share of each time bin a server spent above its
lowest slowdown, redder the slower); the lower panel colours the bins by the job running there.
Long windows are aggregated into at most :data:`BINS` time bins.  A job moved by re-planning is
drawn on each placement it held over the interval it held it (the simulator's ``held`` record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["servers_over_time", "occupancy", "BINS"]

BINS = 1200
"""Most time bins drawn."""


def _slow_share(
    servers: Sequence[str], start: Mapping[str, float], changes: Mapping[str, Sequence[Any]], edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per server and bin: the share of the bin spent above the server's lowest value, and the
    time-weighted mean slowdown."""
    row = {sid: k for k, sid in enumerate(servers)}
    events: dict[str, list[tuple[float, float]]] = {sid: [(edges[0], float(start[sid]))] for sid in servers}
    for t, sid, v in zip(changes.get("time_s", ()), changes.get("server", ()), changes.get("value", ())):
        if sid in events:  # (a congested domain's changes, "domain:...", have no server row)
            events[sid].append((float(t), float(v)))
    share = np.zeros((len(servers), len(edges) - 1))
    mean = np.zeros_like(share)
    width = np.diff(edges)
    for sid, ev in events.items():
        ts = np.array([t for t, _ in ev] + [edges[-1]])
        vs = np.array([v for _, v in ev])
        low = vs.min()
        # the piecewise-constant series integrated over each bin
        cuts = np.union1d(np.clip(ts, edges[0], edges[-1]), edges)
        mids = 0.5 * (cuts[:-1] + cuts[1:])
        val = vs[np.clip(np.searchsorted(ts, mids, side="right") - 1, 0, len(vs) - 1)]
        b = np.clip(np.searchsorted(edges, mids, side="right") - 1, 0, len(edges) - 2)
        dt = np.diff(cuts)
        k = row[sid]
        np.add.at(share[k], b, dt * (val > low + 1e-12))
        np.add.at(mean[k], b, dt * val)
    return share / width, mean / width


def occupancy(
    servers: Sequence[str],
    jobs: Sequence[Mapping[str, Any]],
    held: Sequence[Mapping[str, Any]] | None,
    edges: np.ndarray,
) -> np.ndarray:
    """Per server and time bin, the colour index (0-19, by order of start) of the job holding
    it, ``-1`` where none does: each interval of ``held`` (or, without it, each job's last
    placement from start to end) over its bins."""
    row = {sid: k for k, sid in enumerate(servers)}
    occ = np.full((len(servers), len(edges) - 1), -1.0)
    colour = {str(j["job"]): n % 20 for n, j in enumerate(sorted(jobs, key=lambda j: float(j["start_s"])))}
    if held is None:
        held = [
            {"job": j["job"], "from_s": j["start_s"], "to_s": j["end_s"], "placement": j.get("placement")} for j in jobs
        ]
    for h in sorted(held, key=lambda h: float(h["from_s"])):
        a = np.searchsorted(edges, float(h["from_s"]), side="right") - 1
        b = max(a + 1, np.searchsorted(edges, float(h["to_s"]), side="left"))
        for part in str(h.get("placement") or "").split():
            sid = part.split(":")[0]
            if sid in row:
                occ[row[sid], a:b] = colour.get(str(h["job"]), 0)
    return occ


def servers_over_time(
    servers: Sequence[str],
    truth_start: Mapping[str, float],
    changes: Mapping[str, Sequence[Any]],
    jobs: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    held: Sequence[Mapping[str, Any]] | None = None,
    title: str = "",
) -> Path:
    """Draw the servers over time to ``path`` (PNG or SVG); ``jobs`` are the simulator's job
    rows (``job``, ``start_s``, ``end_s``, ``placement`` as ``server:workers ...``), ``held``
    the intervals each job held each of its placements (``job``, ``from_s``, ``to_s``,
    ``placement``; without it, each job is drawn on its last placement from start to end)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colormaps

    t0 = min([float(j["start_s"]) for j in jobs] + [0.0])
    t1 = max([float(j["end_s"]) for j in jobs] + list(map(float, changes.get("time_s", ()))) + [t0 + 1.0])
    edges = np.linspace(t0, t1, min(BINS, max(2, int(t1 - t0))) + 1)
    share, _ = _slow_share(servers, truth_start, changes, edges)
    occ = occupancy(servers, jobs, held, edges)
    tab = colormaps["tab20"]
    img = np.ones((*occ.shape, 4))
    busy = occ >= 0
    img[busy] = tab(occ[busy].astype(int) / 19.0)
    days = (t1 - t0) / 86400.0
    unit, scale = ("days", 86400.0) if days >= 2 else ("hours", 3600.0)
    extent = (t0 / scale, t1 / scale, len(servers), 0)
    height = min(14.0, max(4.0, 0.05 * len(servers) * 2 + 2))
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, height), sharex=True)
    a1.imshow(share, aspect="auto", cmap="Reds", vmin=0, vmax=1, extent=extent, interpolation="nearest")
    a1.set_ylabel("server")
    a1.set_title("slow episodes (share of each bin a server spent above its lowest slowdown)", fontsize=9)
    a2.imshow(img, aspect="auto", extent=extent, interpolation="nearest")
    a2.set_ylabel("server")
    a2.set_xlabel(f"time ({unit}; {len(edges) - 1} bins of {(edges[1] - edges[0]) / 60:.1f} min)")
    a2.set_title(f"jobs running ({len(jobs)} jobs, coloured in order of start)", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out

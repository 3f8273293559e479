"""Per-GPU factors in the exact models (DESIGN.md, "Per-GPU factors"): a job's GPU classes on a
server with factors, its factor levels above the least, and each level's exact chain link (an
independent slowdown's CDF ratio, or a scenario table's times).  The index
(:mod:`placement.formulations.index`) builds them; the MILP and CP-SAT models count GPUs by class."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.model.records import Instance
from placement.model.tolerances import TIE_RTOL
from placement.problem.arrays import EvalIndex

__all__ = [
    "GpuEntry",
    "GpuLevel",
    "by_gpu_class",
    "cdf_below",
    "chain_level_links",
    "gpu_entry",
    "scenario_level_times",
]


@dataclass
class GpuLevel:
    """One factor level ``f_l`` above the least of a job's GPU classes on a server: ``u_l`` = the
    job holds a GPU of factor >= ``f_l`` there.  With the levels ``f_1 < f_2 < ...``,
    ``P(a f* S < t) = P(a f_1 S < t) prod_{l >= 2} (P(a f_l S < t) / P(a f_{l-1} S < t))^{u_l}``:
    the server's link at ``f_1`` times one link per level, exact (``f*`` is the largest held)."""

    factor: float
    classes: tuple[int, ...]
    """The server's GPU classes (indices into :attr:`GpuEntry.classes`) of factor >= ``factor``."""
    q: np.ndarray | None = None
    """Independent slowdowns: the ratio per support point (1 where the level below is 0)."""
    scen_time: np.ndarray | None = None
    """Scenario tables: ``a f_l S_s`` per scenario."""


@dataclass
class GpuEntry:
    """A job's choice of GPUs on one server with per-GPU factors (DESIGN.md, "Per-GPU factors")."""

    i: int
    """The server's entry in :attr:`JobIndex.servers`."""
    sp: int
    classes: list[tuple[int, float, int]]
    """Per GPU class of the server: (class index in :attr:`ProblemIndex.gpu_classes`, its factor
    for the job, most workers of the job it can take)."""
    levels: list[GpuLevel]


def by_gpu_class(gpu_x: Mapping[tuple[int, int, int], Any]) -> list[tuple[tuple[int, int], list[Any]]]:
    """A model's GPU-class variables ``(job, server, class) -> var`` by (server, class), sorted."""
    out: dict[tuple[int, int], list[Any]] = {}
    for (_, sp, c), v in gpu_x.items():
        out.setdefault((sp, c), []).append(v)
    return sorted(out.items(), key=lambda kv: kv[0])


def gpu_entry(instance: Instance, jp: int, i: int, sp: int, cap: int, gclasses: Mapping[int, Any]) -> GpuEntry:
    """Job ``jp``'s GPU classes on server ``sp`` and its factor levels above the least."""
    classes = [(c, float(f[jp]), min(len(ids), cap)) for c, (ids, f) in enumerate(gclasses[sp])]
    factors = sorted({f for _, f, _ in classes})
    levels = [GpuLevel(f, tuple(c for c, fc, _ in classes if fc >= f)) for f in factors[1:]]
    return GpuEntry(i, sp, classes, levels)


def cdf_below(v: np.ndarray, p: np.ndarray, scale: float, t: np.ndarray) -> np.ndarray:
    """``P(scale S < t_k)`` for each point (values ``v``, probs ``p``; ties within a relative
    tolerance count as equal, probabilities within 1e-15 of 1 as 1)."""
    cdf = np.concatenate(([0.0], np.cumsum(p)))
    k = np.searchsorted(scale * v, t * (1 - TIE_RTOL), side="left")
    q = np.minimum(cdf[k], 1.0)
    q[q > 1 - 1e-15] = 1.0
    return q


def scenario_level_times(entries: Sequence[GpuEntry], ev: EvalIndex, jp: int, rows: Sequence[Any]) -> None:
    """Scenario tables: each level's ``a f_l S_s`` per scenario for job ``jp`` (``rows[e.i]`` the
    server's slowdowns, ``a`` its compute there at factor 1)."""
    for e in entries:
        for lv in e.levels:
            lv.scen_time = ev.base_a(jp, e.sp) * lv.factor * np.asarray(rows[e.i], dtype=float)


def chain_level_links(
    entries: Sequence[GpuEntry],
    ev: EvalIndex,
    jp: int,
    dists: Sequence[tuple[np.ndarray, np.ndarray]],
    q: np.ndarray,
    t: np.ndarray,
) -> None:
    """Independent slowdowns: each level's link, ``P(a f_l S < t) / P(a f_{l-1} S < t)`` at the
    support points ``t`` (1 where the level below is 0), from the server's column of ``q``."""
    for e in entries:
        v, p = dists[e.i]
        below = q[:, e.i]
        for lv in e.levels:
            nxt = cdf_below(v, p, ev.base_a(jp, e.sp) * lv.factor, t)
            with np.errstate(invalid="ignore", divide="ignore"):
                lv.q = np.clip(np.where(below > 0, nxt / np.where(below > 0, below, 1.0), 1.0), 0.0, 1.0)
            below = nxt

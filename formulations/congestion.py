"""Congested domains in the exact models (DESIGN.md, "Congested domains"), exact.

An all-reduce job on a domain home ``h`` pays ``C_h E[max_d L_d]`` over the congested domains it
crosses: ``h`` and those inside it holding one of its servers.  Per job, a crossing indicator
``v_d >= y_i + Z_d - 1`` for each of its units ``i`` inside ``d``, with ``Z_d`` the sum of its
domain homes that hold ``d`` (``h = d`` or an ancestor): every used server lies in the chosen home,
so ``v_d = 1`` exactly when ``d`` is crossed at the optimum (crossing costs, so ``v`` sits at its
lower bound).  Over the merged support points ``1 = l_0 < l_1 < ... < l_K`` of the domains' laws,
``E[max L] = 1 + sum_k (l_k - l_{k-1}) H_k`` with ``H_k >= 1 - prod_{d crossed} P(L_d < l_k)``, the
same exact product chain as the compute term's over ``v``; and ``C_h H_k`` is ``C_h w_hk`` with
``w_hk >= H_k + z_h - 1``, ``w >= 0`` (exact: every coefficient is non-negative).  No
approximation: the model's optimum is the true one.

Which jobs are modelled (:func:`modelled`): all-reduce jobs without a fitted ``gamma`` (a count-
dependent all-reduce times ``L`` would need one more product).  A parameter-server or hybrid job,
or one with ``gamma`` terms, whose homes cross a congested domain is left out of the models'
optimality claims (:func:`unmodelled_jobs`): the models price it without congestion, a valid bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.formulations.chain import product_chain
from placement.model.records import Instance
from placement.problem.congestion import congestion_of
from placement.problem.topology import cluster_of

JobIndex = Any
"""A :class:`~placement.formulations.index.JobIndex` (which imports this module)."""

__all__ = ["CongIndex", "cong_index", "milp_congestion", "unmodelled_jobs"]


@dataclass(frozen=True)
class CongIndex:
    """A job's congested domains and their data (see the module's docstring)."""

    domains: tuple[int, ...]
    """The congested domains some domain home of the job holds with one of its units inside."""
    units: tuple[tuple[int, ...], ...]
    """Per domain, the job's units (positions in ``JobIndex.servers``) inside it."""
    holders: tuple[tuple[int, ...], ...]
    """Per domain, the job's homes (indices in ``JobIndex.homes``) that hold it."""
    dl: np.ndarray
    """``l_k - l_{k-1}`` for the merged support points above 1."""
    r: np.ndarray
    """``r[k, d] = P(L_d < l_k)``."""

    def upper(self) -> float:
        """The largest ``L`` any crossing can see."""
        return float(1.0 + self.dl.sum())


def _crossable(instance: Instance, j: JobIndex) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    cong = congestion_of(instance)
    if not cong.any:
        return []
    cl = cluster_of(instance)
    out = []
    for d in sorted(cong.laws):
        inside = set(cl.domain_members[d].tolist())
        units = tuple(i for i, sp in enumerate(j.servers) if int(sp) in inside)
        holding = _up(cl, d)  # the homes that hold d: d itself and its ancestors
        holders = tuple(h for h, home in enumerate(j.homes) if home.domain in holding)
        if units and holders:
            out.append((d, units, holders))
    return out


def _up(cl: Any, d: int) -> set[int]:
    """Domain ``d`` and every domain holding it."""
    out: set[int] = set()
    at: int | None = d
    while at is not None:
        out.add(at)
        at = cl.domains[at].parent
    return out


def modelled(instance: Instance, j: JobIndex) -> bool:
    """Whether the models price job ``j``'s congestion exactly."""
    job = instance.jobs[j.jp]
    return not (job.is_ps or job.is_hybrid or j.gamma_groups())


def cong_index(instance: Instance, j: JobIndex) -> CongIndex | None:
    """Job ``j``'s congestion data, or ``None`` when it crosses nothing congested or is not
    modelled (:func:`modelled`)."""
    if not modelled(instance, j):
        return None
    got = _crossable(instance, j)
    if not got:
        return None
    laws = congestion_of(instance).laws
    pts = np.unique(np.concatenate([laws[d][0] for d, _, _ in got]))
    pts = pts[pts > 1.0]
    if not len(pts):
        return None
    r = np.array([[float(laws[d][1][laws[d][0] < t].sum()) for d, _, _ in got] for t in pts])
    return CongIndex(
        tuple(d for d, _, _ in got),
        tuple(u for _, u, _ in got),
        tuple(h for _, _, h in got),
        np.diff(np.concatenate(([1.0], pts))),
        r,
    )


def unmodelled_jobs(instance: Instance, assignment: dict[str, dict[str, int]]) -> list[str]:
    """The placed jobs whose congestion the models do not price (:func:`modelled`) and whose
    placement crosses a congested domain: a model's optimum proves nothing for them."""
    cong = congestion_of(instance)
    if not cong.any:
        return []
    gamma = any(t.gamma_ms for t in instance.comm_terms)
    out = []
    for jid, a in assignment.items():
        job = instance.job_by_id[jid]
        if (job.is_ps or job.is_hybrid or gamma) and cong.crossed([s for s, k in a.items() if k > 0]):
            out.append(jid)
    return sorted(out)


def milp_congestion(
    prob: Any, j: JobIndex, c: CongIndex, tag: str, p: Any, ys: Sequence[Any], zs: Sequence[Any]
) -> Any:
    """Add job ``j``'s crossing indicators and chain to the PuLP model ``prob``; return its
    congestion cost ``sum_h C_h (E[max L | h] - 1) z_h`` (``p``: placed, 1 or a binary)."""
    import pulp

    v = []
    for di, (units, holders) in enumerate(zip(c.units, c.holders)):
        vd = pulp.LpVariable(f"cv_{tag}_{di}", 0, 1)
        zd = pulp.lpSum(zs[h] for h in holders)
        for i in units:
            prob += vd >= ys[i] + zd - 1
        v.append(vd)
    homes = sorted({h for hs in c.holders for h in hs})
    cost = []
    for k in range(len(c.dl)):
        hk = pulp.LpVariable(f"cH_{tag}_{k}", 0, 1)
        chain = []
        for di, vd in enumerate(v):
            rk = float(c.r[k, di])
            if rk <= 0:
                prob += hk >= vd
            elif rk < 1:
                chain.append((rk, vd))
        if chain:
            prob += hk >= p - product_chain(prob, p, chain, f"c_{tag}_{k}")
        for h in homes:
            ch = j.homes[h].comm_ms
            if ch > 0:
                wh = pulp.LpVariable(f"cz_{tag}_{k}_{h}", 0, 1)
                prob += wh >= hk + zs[h] - 1
                cost.append(ch * float(c.dl[k]) * wh)
    return pulp.lpSum(cost)

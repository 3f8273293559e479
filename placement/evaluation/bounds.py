"""Lower bounds valid for the true objective, computed without a solver, and the rule
that decides whether a backend's bound may be reported."""

from __future__ import annotations

import math

import numpy as np

from placement.model.records import Instance
from placement.model.tolerances import BOUND_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.rules import comm_ms, fastest_gbps, ps_floor_ms, weight_factor
from placement.problem.topology import cluster_of

__all__ = ["job_lower_bound", "lower_bound", "reportable_bound"]


def job_lower_bound(instance: Instance, jp: int) -> float:
    """A valid lower bound on ``E[T_j]`` over every feasible placement of job ``jp``:
    ``max_n E[a_n S_n] >= min_n E[a_n S_n]`` over allowed servers, plus the all-reduce time
    (a parameter-server job: its push/pull floor, :func:`rules.ps_floor_ms`) at the widest
    bandwidth any server set able to hold the gang offers."""
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    cl = cluster_of(instance)
    free = np.where(np.isfinite(idx.job_a(jp)), cl.free_gpus, 0)
    if not free.any():
        return math.inf
    best_compute = float(idx.job_score(jp)[free > 0].min())
    floor = ps_floor_ms(
        job, fastest_gbps(instance), len(instance.servers) if job.max_servers is None else job.max_servers
    )
    if job.workers == 1:
        return best_compute + floor
    bws = list(cl.intra_bandwidth[free >= job.workers])
    if cl.domains:
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        bws += [d.bandwidth_gbps for d, r in zip(cl.domains, room) if r >= job.workers]
    return best_compute + comm_ms(job, max(bws, default=0.0)) + floor


def lower_bound(instance: Instance) -> float | None:
    """A valid lower bound on the objective of any placement that places every job
    (admission ``all``); ``None`` for ``best_effort``, where the objective counts only the
    jobs placed."""
    if instance.admission != "all":
        return None
    total = 0.0
    for jp, job in enumerate(instance.jobs):
        total += weight_factor(instance, job) * job_lower_bound(instance, jp)
    return total if math.isfinite(total) else None


def reportable_bound(bound: float | None, objective: float) -> tuple[float | None, str | None]:
    """The bound to report beside the exact ``objective``, and a note when one is dropped.

    A bound above the objective by at most ``BOUND_RTOL`` (relative) is the solvers'
    tolerance and is clipped to it; further above, it is not a bound and is dropped."""
    if bound is None:
        return None, None
    if objective < bound <= objective * (1 + BOUND_RTOL) + 1e-9:
        return objective, None
    if bound > objective:
        return None, f"dropped bound {bound:.9g} above the true objective {objective:.9g}"
    return bound, None

"""The exact models' two reductions' rules (:func:`placement.formulations.index.index_instance`):
how far each job's expected time may go in a placement that beats a known one (pruning), and
which servers are interchangeable (classes aggregated into units)."""

from __future__ import annotations

import math

import numpy as np

from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance
from placement.problem.rules import singled_out_servers, weight_factor
from placement.problem.topology import cluster_of

__all__ = ["prune_thresholds", "server_classes"]


def prune_thresholds(instance: Instance, cutoff: float) -> np.ndarray:
    """Per job, the largest ``E[T_j]`` a placement with objective below ``cutoff`` can have:
    ``(cutoff - sum_{k != j} f_k LB_k) / f_j`` with ``LB_k`` the job's own lower bound
    (:func:`placement.evaluate.job_lower_bound`) and ``f`` the objective factors.  Using
    a server ``n`` costs job ``j`` at least ``E[a_jn S_n]`` plus its cheapest all-reduce,
    since the expected maximum is at least each used server's expectation."""
    lbs = np.array([job_lower_bound(instance, jp) for jp in range(len(instance.jobs))], dtype=float)
    f = np.array([weight_factor(instance, j) for j in instance.jobs], dtype=float)
    if not np.isfinite(lbs).all():
        return np.full(len(lbs), math.inf)
    rest = float(f @ lbs) - f * lbs
    return (cutoff - rest) / np.where(f > 0, f, 1.0) + np.where(f > 0, 0.0, math.inf)


def server_classes(instance: Instance) -> list[list[int]]:
    """Interchangeable servers (see :attr:`ProblemIndex.classes`), in instance order."""
    singled = singled_out_servers(instance)
    cl = cluster_of(instance)
    table = instance.scenarios.slowdowns if instance.scenarios is not None else {}
    groups: dict[tuple, list[int]] = {}
    for sp, s in enumerate(instance.servers):
        if s.id in singled or s.free_gpus <= 0 or s.has_gpu_factors:  # its GPUs are chosen one class at a time
            continue
        key = (
            cl.chain(s.id)[:1],
            s.gpu_type,
            s.slowdown,
            s.free_gpus,
            s.cpus,
            s.memory_gb,
            s.intra_bandwidth_gbps,
            tuple(table.get(s.id, ())),
        )
        groups.setdefault(key, []).append(sp)
    return [g for g in groups.values() if len(g) >= 2]

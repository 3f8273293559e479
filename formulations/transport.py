"""A capacity-aware lower bound for large instances: the transportation LP over server
classes.

For any placement, ``E[T_j] >= max_{n used} E[a_jn S_n] >= (1/W_j) sum_n x_jn E[a_jn S_n]``
(the maximum is at least the worker-weighted average), and ``C_j`` is at least its value
at the widest bandwidth a set able to hold the gang has.  Minimising the right-hand side
over *fractional* worker counts with the servers' free GPUs as capacities is a
transportation LP: its optimum is a valid lower bound on the objective of every placement
that places all jobs.  Servers are aggregated into classes of equal GPU type and expected
slowdown rounded *down* to ``CLASS_STEP`` (so the bound stays valid, looser by at most
that step); servers a job restricts or overrides stay singletons.  Solved by HiGHS
(highspy) directly; the reported bound is the LP optimum times ``1 - 1e-7`` (its
tolerance).
"""

from __future__ import annotations

import math

import numpy as np

from placement.evaluation.bounds import job_lower_bound
from placement.formulations.quiet import interruptible_run, native_stdout_silenced
from placement.model.records import Instance
from placement.model.tolerances import TRANSPORT_LP_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.rules import singled_out_servers, weight_factor
from placement.problem.topology import cluster_of

__all__ = ["transport_lower_bound", "CLASS_STEP"]

CLASS_STEP = 0.02
"""Expected slowdowns are rounded down to multiples of this to form server classes."""


def transport_lower_bound(instance: Instance, *, time_limit_s: float = 30.0) -> float | None:
    """The transportation-LP bound (``None``: best effort, no HiGHS, or not solved in time)."""
    if instance.admission != "all" or not instance.jobs:
        return None
    try:
        import highspy
    except ImportError:  # pragma: no cover
        return None
    idx = arrays_of(instance)
    free = cluster_of(instance).free_gpus
    special = singled_out_servers(instance)
    special_pos = {instance.server_pos[s] for s in special}
    mean = np.floor(idx.server_mean / CLASS_STEP + 1e-9) * CLASS_STEP
    keys: dict[tuple, int] = {}
    cls = np.empty(len(free), dtype=np.int64)
    for sp in range(len(free)):
        k = ("s", sp) if sp in special_pos else ("c", int(idx.type_codes[sp]), float(mean[sp]))
        cls[sp] = keys.setdefault(k, len(keys))
    C = len(keys)
    cap = np.bincount(cls, weights=free, minlength=C)
    rep = np.zeros(C, dtype=np.int64)
    rep[cls] = np.arange(len(free))  # a representative server per class
    class_mean = np.full(C, np.inf)
    np.minimum.at(class_mean, cls, np.where(np.isin(np.arange(len(free)), list(special_pos)), idx.server_mean, mean))
    costs: list[np.ndarray] = []  # per job: arrays, concatenated below
    rows: list[np.ndarray] = []
    cols_job: list[np.ndarray] = []
    constant = 0.0
    for jp, job in enumerate(instance.jobs):
        lb_j = job_lower_bound(instance, jp)
        if not math.isfinite(lb_j):
            return None
        wf = weight_factor(instance, job)
        a = idx.job_a(jp)
        # the all-reduce lower bound of job_lower_bound: its comm part
        constant += wf * (lb_j - float(idx.job_score(jp)[np.isfinite(a) & (free > 0)].min()))
        a_c = a[rep]
        m_c = class_mean.copy()
        for sp in special_pos:
            m_c[cls[sp]] = idx.mean_slowdown(jp, sp)
        ok = np.flatnonzero(np.isfinite(a_c) & (cap > 0))
        costs.append(wf * a_c[ok] * m_c[ok] / job.workers)
        rows.append(ok)
        cols_job.append(np.full(len(ok), jp))
    cost_arr, row_arr, job_arr = np.concatenate(costs), np.concatenate(rows), np.concatenate(cols_job)
    n = len(cost_arr)
    J = len(instance.jobs)
    with native_stdout_silenced():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", "ipm")  # 3-4x faster than simplex on these LPs
    h.setOptionValue("time_limit", float(max(0.1, time_limit_s)))
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = J + C
    lp.col_cost_ = np.asarray(cost_arr, dtype=float)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, highspy.kHighsInf)
    demand = np.array([j.workers for j in instance.jobs], dtype=float)
    lp.row_lower_ = np.concatenate([demand, np.full(C, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([demand, cap])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, 2 * n + 1, 2, dtype=np.int32)
    idx_arr = np.empty(2 * n, dtype=np.int32)
    idx_arr[0::2] = np.asarray(job_arr, dtype=np.int32)
    idx_arr[1::2] = J + np.asarray(row_arr, dtype=np.int32)
    lp.a_matrix_.index_ = idx_arr
    lp.a_matrix_.value_ = np.ones(2 * n)
    with native_stdout_silenced():
        h.passModel(lp)
        interruptible_run(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return (float(h.getInfo().objective_function_value) + constant) * (1 - TRANSPORT_LP_RTOL)

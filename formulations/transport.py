"""A capacity-aware lower bound for large instances: the transportation LP over server
classes.

For any placement, ``E[T_j] >= max_{n used} E[a_jn S_n] >= (1/W_j) sum_n x_jn E[a_jn S_n]``
(the maximum is at least the worker-weighted average), and ``C_j`` is at least its value
at the widest bandwidth a set able to hold the gang has (``comm_lower_bound``); also
``E[T_j] >= job_lower_bound`` (one server, or the spread bound of ``k`` servers).  So with
``e_j >= average + comm_j`` and ``e_j >= job_lower_bound``, minimising ``sum_j f_j e_j``
over *fractional* worker counts with the servers' free GPUs as capacities is an LP whose
optimum is a valid lower bound on the objective of every placement that places all jobs
(at least the plain transportation LP's, and at least the sum of the per-job bounds).  Servers are aggregated into classes of equal GPU type and expected
slowdown rounded *down* to ``CLASS_STEP`` (so the bound stays valid, looser by at most
that step); servers a job restricts or overrides stay singletons.  Solved by HiGHS
(highspy) directly; the reported bound is the LP optimum times ``1 - 1e-7`` (its
tolerance).
"""

from __future__ import annotations

import math

import numpy as np

from placement.evaluation.bounds import comm_lower_bound, job_lower_bound
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
    J = len(instance.jobs)
    wfs = np.empty(J)
    comm = np.empty(J)
    lbs = np.empty(J)
    for jp, job in enumerate(instance.jobs):
        lbs[jp] = job_lower_bound(instance, jp)
        comm[jp] = comm_lower_bound(instance, jp)
        if not (math.isfinite(lbs[jp]) and math.isfinite(comm[jp])):
            return None
        wfs[jp] = weight_factor(instance, job)
        a = idx.job_a(jp)
        a_c = a[rep]
        m_c = class_mean.copy()
        for sp in special_pos:
            m_c[cls[sp]] = idx.mean_slowdown(jp, sp)
        ok = np.flatnonzero(np.isfinite(a_c) & (cap > 0))
        costs.append(a_c[ok] * m_c[ok] / job.workers)
        rows.append(ok)
        cols_job.append(np.full(len(ok), jp))
    cost_arr, row_arr, job_arr = np.concatenate(costs), np.concatenate(rows), np.concatenate(cols_job)
    n = len(cost_arr)
    with native_stdout_silenced():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", "ipm")  # 3-4x faster than simplex on these LPs
    h.setOptionValue("time_limit", float(max(0.1, time_limit_s)))
    # columns: x (job, class) then e_j; rows: demand (J), capacity (C), e_j >= average (J)
    lp = highspy.HighsLp()
    lp.num_col_ = n + J
    lp.num_row_ = 2 * J + C
    lp.col_cost_ = np.concatenate([np.zeros(n), wfs])
    lp.col_lower_ = np.concatenate([np.zeros(n), lbs])
    lp.col_upper_ = np.full(n + J, highspy.kHighsInf)
    demand = np.array([j.workers for j in instance.jobs], dtype=float)
    lp.row_lower_ = np.concatenate([demand, np.full(C, -highspy.kHighsInf), comm])
    lp.row_upper_ = np.concatenate([demand, cap, np.full(J, highspy.kHighsInf)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([np.arange(0, 3 * n + 1, 3), 3 * n + 1 + np.arange(J)]).astype(np.int32)
    idx_arr = np.empty(3 * n + J, dtype=np.int32)
    idx_arr[0 : 3 * n : 3] = np.asarray(job_arr, dtype=np.int32)
    idx_arr[1 : 3 * n : 3] = J + np.asarray(row_arr, dtype=np.int32)
    idx_arr[2 : 3 * n : 3] = J + C + np.asarray(job_arr, dtype=np.int32)
    idx_arr[3 * n :] = J + C + np.arange(J, dtype=np.int32)
    val = np.empty(3 * n + J)
    val[0 : 3 * n : 3] = 1.0
    val[1 : 3 * n : 3] = 1.0
    val[2 : 3 * n : 3] = -cost_arr
    val[3 * n :] = 1.0
    lp.a_matrix_.index_ = idx_arr
    lp.a_matrix_.value_ = val
    with native_stdout_silenced():
        h.passModel(lp)
        interruptible_run(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getInfo().objective_function_value) * (1 - TRANSPORT_LP_RTOL)

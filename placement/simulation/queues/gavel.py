"""``gavel``: Gavel's max-min fairness (OSDI'20) in rounds of :data:`ROUND_S`.

Each round, every candidate's share of time ``x_j`` is the max-min fair allocation of the GPUs:
on one GPU type, water-filling (every job gets the same number of GPUs, a gang never more than
its own, until the GPUs run out: ``x_j = min(1, level / g_j)``); on several, Gavel's
heterogeneity-aware linear program, which maximises the least normalised throughput
``sum_t x_jt speed_j(t) / (equal share's)`` subject to ``sum_t x_jt <= 1`` and
``sum_j g_j x_jt <= GPUs of t`` (the jobs' ``gpu_speed``; the equal share gives a job each
type's time in proportion to the type's GPUs), ties broken towards the largest total.  Gavel's round-based mechanism then runs the
jobs by priority ``x_j / (share of time received since arrival)``, highest first, each that
fits; a job not chosen for a round is preempted, and a job that was running keeps its GPUs
(the engine resumes a preempted job on its previous GPUs when they are free:
``keep_previous``).  Decisions happen only at rounds: jobs that arrive or GPUs freed mid-round
wait for the next one, as in Gavel's simulator."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from placement.model.records import Instance
from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Gavel", "ROUND_S", "water_fill", "max_min_shares"]

ROUND_S = 360.0
"""Gavel's round (6 minutes, its default)."""


def water_fill(gangs: Sequence[int], gpus: int) -> np.ndarray:
    """Each gang's share of time ``min(1, level / g)``, with the common GPU level as high as the
    ``gpus`` allow (every gang wholly served when they all fit)."""
    g = np.asarray(gangs, dtype=float)
    if g.sum() <= gpus:
        return np.ones(len(g))
    # the level L solves sum_j min(g_j, L) = gpus: raise it past the gangs in increasing order
    gs = np.sort(g)
    left, k = float(gpus), len(gs)
    level = 0.0
    for i, gi in enumerate(gs):
        if gi * (k - i) >= left:
            level = left / (k - i)
            break
        left -= gi
    return np.minimum(1.0, level / g)


def _highs() -> Any:
    """A HiGHS instance, its banner (printed once per process, to the process's stdout) hidden."""
    import highspy

    fd = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(fd, 1)
        os.close(fd)
    h.setOptionValue("output_flag", False)
    return h


def max_min_shares(gangs: Sequence[int], speeds: np.ndarray, type_gpus: Sequence[int]) -> np.ndarray:
    """Gavel's heterogeneity-aware max-min fairness: ``x[j, t]``, the share of time job ``j``
    runs on type ``t`` (``speeds[j, t]``, 0 where it cannot run), maximising the least
    throughput normalised by the job's equal share's."""
    import highspy

    m, k = speeds.shape
    g = np.asarray(gangs, dtype=float)
    cap = np.asarray(type_gpus, dtype=float)
    # the equal share: each type's time in proportion to its GPUs, a 1/m share of the cluster
    frac = cap / cap.sum()
    scale = np.minimum(1.0, cap.sum() / (m * g))
    equal = (speeds * frac[None, :]).sum(axis=1) * scale
    equal = np.where(equal > 0, equal, 1.0)
    inf = highspy.kHighsInf
    n = m * k + 1  # x[j, t] then t
    h = _highs()
    # the least normalised throughput, then (a thousandth as much) their sum: among the
    # max-min allocations, the one that leaves no GPU idle that a job could use
    cost = np.concatenate([(speeds / equal[:, None]).ravel() * 1e-3 / m, [1.0]])
    upper = np.where(np.concatenate([speeds.ravel() > 0, [True]]), 1.0, 0.0)
    upper[-1] = inf
    h.addCols(n, cost, np.zeros(n), upper, 0, np.array([], np.int32), np.array([], np.int32), np.array([]))
    starts: list[int] = []
    index: list[int] = []
    value: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    for j in range(m):  # t - sum_t x speed / equal <= 0 ; sum_t x <= 1
        starts.append(len(index))
        index += [j * k + t for t in range(k)] + [n - 1]
        value += [-speeds[j, t] / equal[j] for t in range(k)] + [1.0]
        lo.append(-inf)
        hi.append(0.0)
        starts.append(len(index))
        index += [j * k + t for t in range(k)]
        value += [1.0] * k
        lo.append(-inf)
        hi.append(1.0)
    for t in range(k):  # sum_j g x <= GPUs of t
        starts.append(len(index))
        index += [j * k + t for j in range(m)]
        value += g.tolist()
        lo.append(-inf)
        hi.append(float(cap[t]))
    h.addRows(
        len(lo),
        np.array(lo),
        np.array(hi),
        len(index),
        np.array(starts, np.int32),
        np.array(index, np.int32),
        np.array(value),
    )
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.run()
    x = np.array(h.getSolution().col_value[: m * k]).reshape(m, k)
    return np.clip(x, 0.0, 1.0)


def _speed(c: Candidate, gpu_type: str) -> float:
    """``c``'s relative speed on ``gpu_type`` (0: it cannot run there)."""
    sp = c.job.gpu_speed
    return 1.0 if sp is None else float(sp.get(gpu_type, 0.0))


class Gavel(QueuePolicy):
    name = "gavel"
    preemptive = True
    round_s = ROUND_S
    keep_previous = True

    def __init__(self, cluster: Instance, starvation: float | None = None) -> None:
        super().__init__(cluster, starvation)
        gpus: dict[str, int] = {}
        for s in cluster.servers:
            gpus[s.gpu_type] = gpus.get(s.gpu_type, 0) + s.free_gpus
        self.types = sorted(gpus)
        self.type_gpus = [gpus[t] for t in self.types]

    def shares(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """Each candidate's max-min fair share of time this round."""
        gangs = [c.job.workers for c in candidates]
        if len(self.types) == 1:
            return water_fill(gangs, self.type_gpus[0])
        speeds = np.array([[_speed(c, t) for t in self.types] for c in candidates])
        return max_min_shares(gangs, speeds, self.type_gpus).sum(axis=1)

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        if not candidates:
            return []
        x = self.shares(candidates)

        def priority(i: int) -> float:
            c = candidates[i]
            age = now - c.job.submit_s
            received = c.served_s / age if age > 0 else 0.0
            return math.inf if received <= 0 else float(x[i]) / received

        keyed = sorted(
            range(len(candidates)),
            key=lambda i: (-priority(i), not candidates[i].running, candidates[i].job.submit_s, candidates[i].job.id),
        )
        return [candidates[i] for i in keyed]

"""The rules of the model, each written once: every layer above (validator, heuristics,
exact models, bounds) calls these instead of restating them.

- **communication**: the all-reduce time of a job at a bandwidth level on k servers (the
  ring, plus the level's fitted terms where the instance has them), the push/pull time
  of a parameter-server job's shards on a server, and a hybrid job's stage-boundary
  (point-to-point) and per-stage data-parallel all-reduce times;
- **objective**: a job's coefficient on ``E[T_j]``;
- **capacity**: how many workers of a job fit in what is left of a server (GPUs, CPU,
  memory), whether a demand is over a capacity, and the integer units of capacity rows;
- **deadline**: the largest ``E[T_j]`` that meets a job's deadline;
- **singled out**: the servers some job names (``allowed_servers``) or has its own estimate
  for, which aggregations must keep apart;
- **moves**: the workers a new allocation takes off their previous servers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeVar

import numpy as np

from placement.model.records import CommTerm, Instance, Job
from placement.model.tolerances import CAPACITY_RESOLUTION, CAPACITY_RTOL, DEADLINE_RTOL

K = TypeVar("K")

__all__ = [
    "comm_ms",
    "comm_floor_ms",
    "min_gamma_ms",
    "gamma_too_low",
    "comm_ms_each",
    "ps_comm_ms",
    "ps_floor_ms",
    "p2p_ms",
    "stage_sync_ms",
    "fastest_gbps",
    "SHARD_RESOURCES",
    "weight_factor",
    "spread_factor",
    "RESOURCES",
    "worker_room",
    "over_capacity",
    "demand_units",
    "capacity_units",
    "exact_in_units",
    "deadline_limit_ms",
    "meets_deadline",
    "singled_out_servers",
    "moves",
]


# -------------------------------------------------------------- communication
def comm_ms(job: Job, bandwidth_gbps: float, servers: int, terms: Mapping[float, CommTerm]) -> float:
    """All-reduce time in ms of ``job`` on ``servers`` servers whose bottleneck bandwidth is
    ``bandwidth_gbps``: the ring ``2 (W-1)/W * 8 G / B``, plus the fitted terms of that level
    (``terms``, :attr:`Instance.terms_by_bandwidth`): ``alpha 2 (W - 1) + gamma 2 (k - 1) / k``.
    0 for one worker, inf when B = 0; 0 for a parameter-server job, whose push/pull phase is
    :func:`ps_comm_ms`'s, and for a hybrid job, whose communication is :func:`p2p_ms` and
    :func:`stage_sync_ms`."""
    if job.workers == 1 or job.is_ps or job.is_hybrid or job.gradient_mb <= 0:
        return 0.0  # nothing to all-reduce (the fitted terms too are the all-reduce's)
    if bandwidth_gbps <= 0:
        return math.inf
    W = job.workers
    c = 2.0 * (W - 1) / W * 8.0 * job.gradient_mb / bandwidth_gbps
    t = terms.get(bandwidth_gbps) if terms else None
    if t is not None:
        c += t.alpha_ms * 2.0 * (W - 1) + (t.gamma_ms * 2.0 * (servers - 1) / servers if servers > 1 else 0.0)
    return c


def comm_floor_ms(job: Job, bandwidth_gbps: float, terms: Mapping[float, CommTerm], min_servers: int) -> float:
    """The least :func:`comm_ms` at ``bandwidth_gbps`` over every count of at least
    ``min_servers`` servers: ``gamma``'s factor ``2 (k - 1) / k`` grows with ``k``, so the least
    is at ``min_servers`` for a ``gamma >= 0`` and at the most servers a gang can use (one
    worker each) for a negative one."""
    t = terms.get(bandwidth_gbps) if terms else None
    k = job.workers if t is not None and t.gamma_ms < 0 else min_servers
    return comm_ms(job, bandwidth_gbps, max(k, min_servers), terms)


def min_gamma_ms(gradient_mb: float, bandwidth_gbps: float) -> float:
    """The least ``gamma`` that keeps an all-reduce of ``gradient_mb`` at ``bandwidth_gbps``
    non-negative on every server count: the ring's ``2 (W - 1) / W * 8 G / B`` is at least
    ``2 (k - 1) / k * 8 G / B`` on ``k <= W`` servers, so ``gamma >= -8 G / B``."""
    return -8.0 * gradient_mb / bandwidth_gbps


def gamma_too_low(workers: int, gradient_mb: float, architecture: str, term: CommTerm) -> bool:
    """Whether ``term``'s ``gamma`` would make the all-reduce of a job (``workers``,
    ``gradient_mb``, ``architecture``) negative on some server count (below :func:`min_gamma_ms`)."""
    return (
        term.gamma_ms < 0
        and architecture == "allreduce"
        and workers > 1
        and gradient_mb > 0
        and term.gamma_ms < min_gamma_ms(gradient_mb, term.bandwidth_gbps) * (1 + 1e-9)
    )


def comm_ms_each(job: Job, bandwidths: np.ndarray, terms: Mapping[float, CommTerm], min_servers: int = 1) -> np.ndarray:
    """:func:`comm_floor_ms` of ``job`` at each of ``bandwidths`` (computed once per distinct
    bandwidth): exact on one server (``min_servers`` 1 at a server's own bandwidth), else the
    least over ``min_servers`` or more."""
    values, inv = np.unique(bandwidths, return_inverse=True)
    return np.array([comm_floor_ms(job, float(b), terms, min_servers) for b in values])[inv.reshape(-1)]


def ps_comm_ms(
    job: Job, shards: int, local_workers: int, bandwidth_gbps: float, intra_gbps: float, cong: float = 1.0
) -> float:
    """Push/pull time of the ``shards`` of a parameter-server job on one server at S = 1:
    ``8 * 2 * z (G/P) (cong R / B + L / intra)`` ms, with L = ``local_workers`` on that server,
    R = the others (inf when a remote worker has no bandwidth) and ``cong`` the congestion on the
    traffic between servers."""
    if shards <= 0:
        return 0.0
    remote = job.workers - local_workers
    per = 8.0 * 2.0 * shards * job.gradient_mb / job.shards
    t = 0.0
    if remote > 0:
        t += math.inf if bandwidth_gbps <= 0 else cong * remote / bandwidth_gbps
    if local_workers > 0:
        t += local_workers / intra_gbps
    return per * t


def p2p_ms(job: Job, bandwidth_gbps: float) -> float:
    """A hybrid job's stage-boundary time per microbatch, ``2 * 8 A / B`` ms (activations
    forward, their gradients back), at the bandwidth between the two groups' servers (the
    intra bandwidth when they are one); inf when B = 0."""
    if job.activation_mb <= 0:
        return 0.0
    return math.inf if bandwidth_gbps <= 0 else 2.0 * 8.0 * job.activation_mb / bandwidth_gbps


def stage_sync_ms(job: Job, bandwidth_gbps: float) -> float:
    """A hybrid job's data-parallel all-reduce of one stage, ``2 (dp-1)/dp * 8 (G/pp) / B`` ms
    over the bottleneck bandwidth of that stage's servers (0 when dp = 1; inf when B = 0)."""
    dp, pp = int(job.dp or 1), int(job.pp or 1)
    if dp <= 1 or job.gradient_mb <= 0:
        return 0.0
    if bandwidth_gbps <= 0:
        return math.inf
    return 2.0 * (dp - 1) / dp * 8.0 * (job.gradient_mb / pp) / bandwidth_gbps


def ps_floor_ms(job: Job, intra_gbps: float, link_gbps: float, most_local: int, servers: int) -> float:
    """A lower bound on a parameter-server job's push/pull phase ``E[max_m c_m S_m]`` (S >= 1),
    ``c_m = 16 z_m (G/P) (R_m / B + L_m / intra_m)``, on any placement in a cluster whose
    fastest server bandwidth is ``intra_gbps`` and fastest link ``link_gbps`` (``B`` of two or
    more servers is at most that), where a server holds at most ``most_local`` of the job's
    workers and the shards go to at most ``servers`` servers.  With the shards on ``k``
    servers: the one holding ``ceil(P / k)`` of them has at most ``min(W, most_local)`` workers
    local and the rest remote; and for ``k >= 2`` the one with the fewest local workers has at
    most ``floor(W / k)`` (each holds a shard); the least over ``k`` of the larger of the two.
    On one server with every worker local this is ``16 G W / intra``."""
    if not job.is_ps:
        return 0.0
    W, P, G = job.workers, job.shards, job.gradient_mb

    def per_shard(local_most: int) -> float:
        """``R / B + L / intra`` at its least over ``L`` in ``[0, local_most]`` (linear in ``L``)."""
        best = math.inf
        for L in {0, min(W, local_most)}:
            remote = W - L
            if remote > 0 and link_gbps <= 0:
                continue  # no link: the workers cannot be remote
            best = min(best, (remote / link_gbps if remote else 0.0) + (L / intra_gbps if L else 0.0))
        return best

    floors = []
    for k in range(1, max(1, min(P, servers)) + 1):
        most = 16.0 * math.ceil(P / k) * G / P * per_shard(most_local)
        fewest = 16.0 * G / P * per_shard(W // k) if k >= 2 else 0.0
        floors.append(max(most, fewest))
    return min(floors)


def fastest_gbps(instance: Instance) -> tuple[float, float]:
    """The fastest bandwidth of the cluster inside a server, and on a link (0: no link)."""
    return (
        max(s.intra_bandwidth_gbps for s in instance.servers),
        max((ln.bandwidth_gbps for ln in instance.links), default=0.0),
    )


# ------------------------------------------------------------------ objective
def spread_factor(instance: Instance, servers: int) -> float:
    """How many times slower a job runs on ``servers`` servers: the instance's
    ``locality_penalty`` on two or more, else 1 (Blox's and PAL's semantics)."""
    return instance.locality_penalty if servers >= 2 else 1.0


def weight_factor(instance: Instance, job: Job) -> float:
    """The objective's coefficient on ``E[T_j]`` (ms): ``w_j``, or ``w_j iterations_j / 1000``."""
    if instance.objective == "weighted_expected_jct":
        return job.weight * (job.iterations or 0) / 1000.0
    return job.weight


# ------------------------------------------------------------------- capacity
RESOURCES = (("cpus", "cpus_per_worker"), ("memory_gb", "memory_gb_per_worker"))
"""The divisible resources besides GPUs: (server field, job field per worker)."""


SHARD_RESOURCES = (("cpus", "ps_cpus"), ("memory_gb", "ps_memory_gb"))
"""The resources a parameter-server shard takes (no GPU): (server field, job field per shard)."""


def worker_room(job: Job, gpus_left: np.ndarray, cpus_left: np.ndarray, memory_left: np.ndarray) -> np.ndarray:
    """How many more workers of ``job`` fit in what is left of each server (arrays over the
    same servers; ``inf`` CPU or memory where the server states none): a multiple of the
    job's :attr:`~placement.model.records.Job.unit` (a hybrid job's groups are whole)."""
    r = gpus_left.astype(float)
    for left, per in ((cpus_left, job.cpus_per_worker), (memory_left, job.memory_gb_per_worker)):
        if per:
            r = np.minimum(r, np.floor(left / per + CAPACITY_RTOL))
    out: np.ndarray = np.maximum(r, 0).astype(np.int64)
    unit = job.unit
    if unit > 1:
        out = out // unit * unit
    return out


def over_capacity(demand: float, capacity: float | None) -> bool:
    """Whether ``demand`` exceeds ``capacity`` (``None``: unlimited) beyond float noise."""
    return capacity is not None and demand > capacity * (1 + CAPACITY_RTOL)


def demand_units(per_worker: float) -> int:
    """A per-worker CPU/memory demand in integer units of ``CAPACITY_RESOLUTION``, rounded
    up (against the placement)."""
    return int(math.ceil(per_worker / CAPACITY_RESOLUTION - 1e-6))


def capacity_units(capacity: float) -> int:
    """A server's CPU/memory capacity in integer units, rounded down (against the placement)."""
    return int(math.floor(capacity / CAPACITY_RESOLUTION + 1e-6))


def exact_in_units(instance: Instance) -> bool:
    """Whether every CPU/memory value is a whole number of units, so that integer capacity
    rows are exact (and an integer model's infeasibility is the instance's)."""

    def whole(x: float | None) -> bool:
        return x is None or abs(x / CAPACITY_RESOLUTION - round(x / CAPACITY_RESOLUTION)) <= 1e-6

    return all(whole(getattr(s, f)) for s in instance.servers for f, _ in RESOURCES) and all(
        whole(getattr(j, per)) for j in instance.jobs for _, per in RESOURCES + SHARD_RESOURCES
    )


# ------------------------------------------------------------------- deadline
def deadline_limit_ms(job: Job) -> float | None:
    """The largest expected iteration time (ms) that meets ``job``'s deadline, ``None``
    without one: ``iterations * E[T] / 1000 <= deadline_s`` up to ``DEADLINE_RTOL``."""
    if job.deadline_s is None:
        return None
    return job.deadline_s * 1000.0 / max(job.iterations or 0, 1) * (1 + DEADLINE_RTOL)


def meets_deadline(job: Job, expected_ms: float) -> bool:
    """Whether an expected iteration time of ``expected_ms`` meets ``job``'s deadline."""
    limit = deadline_limit_ms(job)
    return limit is None or expected_ms <= limit


# ---------------------------------------------------------------- singled out
def singled_out_servers(instance: Instance) -> frozenset[str]:
    """Servers some job names in ``allowed_servers`` or carries its own estimate for: they
    are not interchangeable with servers that look the same."""
    out: set[str] = set()
    for j in instance.jobs:
        out.update(j.allowed_servers or ())
        out.update(j.slowdown)
    return frozenset(out)


# ---------------------------------------------------------------------- moves
def moves(previous: Mapping[K, int], new: Mapping[K, int]) -> int:
    """Workers of one job that ``new`` takes off their ``previous`` servers (re-planning):
    ``sum_n max(0, previous[n] - new[n])``."""
    return sum(max(0, int(k) - int(new.get(n, 0))) for n, k in previous.items())

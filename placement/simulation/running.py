"""A running job of the simulator and its iteration time: the snapshot model's formula on the
servers, shards and stage matrix its decision gave, under the current slowdowns ``S``.

``T = slots max_n (a_n S_n + q_n) + sync + C`` (+ a parameter-server job's push/pull phase over
its shards' servers, the same draws): ``slots = 1``, ``q = 0`` and ``sync = 0`` but for hybrid
jobs (:func:`placement.problem.hybrid.stage_terms`), ``C`` the all-reduce (0 for hybrid and
parameter-server jobs).  Also what a running job shows the estimator (:func:`observed`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placement.model.records import Instance, Job
from placement.model.tolerances import TIE_RTOL
from placement.problem.congestion import congestion_of
from placement.problem.hybrid import pipeline_slots, stage_parts
from placement.problem.rules import comm_ms, ps_comm_ms, spread_factor
from placement.problem.topology import cluster_of
from placement.simulation.config import SimulationError
from placement.simulation.workload import TraceJob

__all__ = [
    "Running",
    "advance",
    "finished_row",
    "problem_job",
    "trace_job",
    "running_on",
    "profiled_ms",
    "placed_on",
    "shards_on",
    "set_stages",
    "iteration_ms",
    "observed",
    "LOG_NOISE",
    "placement_text",
    "held_row",
    "isolated_s",
]

LOG_NOISE = 0.02
"""Multiplicative jitter (log-scale standard deviation) of the per-worker times the simulator
logs for the estimator: measured iteration times are never exact."""


@dataclass
class Running:
    tj: TraceJob
    alloc: dict[int, int]
    sps: np.ndarray
    a: np.ndarray
    comm: float
    ideal_ms: float
    start: float
    progress: float = 0.0
    t_last: float = 0.0
    T: float = 0.0
    version: int = 0
    paused_until: float = 0.0
    straggled_iters: float = 0.0
    moves: int = 0
    shards: dict[int, int] = field(default_factory=dict)
    """A parameter-server job's shards: server position -> shards."""
    ps_sps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ps_c: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Its shard servers and their push/pull times at S = 1 (``rules.ps_comm_ms``)."""
    stages: tuple[tuple[int, ...], ...] = ()
    """A hybrid job's stage matrix (server positions)."""
    q: np.ndarray | float = 0.0
    """A hybrid job's stage-boundary time per microbatch on each of ``sps`` (0 otherwise)."""
    slots: int = 1
    """A hybrid job's pipeline slots ``m + pp - 1`` (1 otherwise)."""
    sync: float = 0.0
    """A hybrid job's data-parallel sync ``max_s D_s`` (0 otherwise)."""
    gpus: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """The GPUs its decision chose on servers with per-GPU factors (server position -> indices;
    the engine's :class:`~placement.simulation.gpu_book.GpuBook` gives the rest)."""
    penalty: float = 1.0
    """The cluster's locality penalty when the job spans two or more servers (else 1): its
    whole iteration is that many times slower."""
    since: float = 0.0
    """When the job took the GPUs it holds (its start, or its last move)."""
    resumed: float = 0.0
    """When its present run began (its start, or its last resumption after a preemption)."""
    ran_s: float = 0.0
    """Seconds it held GPUs in the runs before the present one (preemptive queue policies)."""
    pause_s: float = 0.0
    """Seconds of restarts (after a move or a preemption) it has been charged so far."""
    stopped: float = 0.0
    """When it was last preempted."""
    preemptions: int = 0
    crossed: tuple[int, ...] = ()
    """The congested domains it crosses, as positions in the hidden state (``n + k``)."""
    ps_cross: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """The part of each ``ps_c`` that travels between servers (``L`` times longer when congested)."""
    q_cross: np.ndarray | float = 0.0
    """A hybrid job's stage-boundary time to another server on each of ``sps`` (``q`` is the
    larger of it and the boundary within the server, at ``L = 1``; :attr:`q_intra` the latter)."""
    q_intra: np.ndarray | float = 0.0
    sync_cross: float = 0.0
    """A hybrid job's largest ``D`` of a stage that spans servers (``sync_intra``: of one that does not)."""
    sync_intra: float = 0.0

    def servers(self) -> set[int]:
        """Every hidden state the job's time depends on: its workers' and its shards' servers,
        and the congested domains it crosses (``n + k``)."""
        return set(self.alloc) | set(self.shards) | set(self.crossed)


SHAPE_FIELDS = (
    "gpu_speed",
    "architecture",
    "ps_shards",
    "tp",
    "pp",
    "dp",
    "microbatches",
    "activation_mb",
    "app_class",
)
"""The fields a trace job and a problem's job share beyond id, size, compute and gradient."""


def problem_job(tj: TraceJob, **extra: Any) -> Job:
    """The placement problem's job for trace job ``tj`` (``extra``: a decision's fields)."""
    return Job(tj.id, tj.workers, tj.compute_ms, tj.gradient_mb, **{k: getattr(tj, k) for k in SHAPE_FIELDS}, **extra)


def trace_job(job: Job, submit_s: float = 0.0) -> TraceJob:
    """The trace job whose :func:`problem_job` has ``job``'s shape (its own iterations and
    weight; a problem's placement rules, such as ``allowed_servers``, are not a trace's)."""
    return TraceJob(
        job.id,
        submit_s,
        job.workers,
        int(job.iterations or 1),
        job.compute_ms,
        job.gradient_mb,
        weight=job.weight,
        **{k: getattr(job, k) for k in SHAPE_FIELDS},
    )


def running_on(
    cluster: Instance,
    tj: TraceJob,
    alloc: dict[int, int],
    shards: dict[int, int] | None = None,
    stages: Sequence[Sequence[int]] | None = None,
    now: float = 0.0,
) -> Running:
    """``tj`` placed at ``now`` on ``alloc`` (server position -> workers), its shards and
    stage matrix: its compute times, communication and straggler-free time ``ideal_ms``."""
    sps, a, comm = placed_on(cluster, tj, alloc)
    if tj.architecture == "ps" and not shards:
        raise SimulationError(f"job {tj.id!r} is a parameter-server job placed without shards")
    ps_sps, ps_c = shards_on(cluster, tj, alloc, shards or {})
    r = Running(tj, dict(alloc), sps, a, comm, 0.0, start=now, t_last=now, since=now, resumed=now)
    r.shards, r.ps_sps, r.ps_c = dict(shards or {}), ps_sps, ps_c
    set_crossing(cluster, r)
    r.penalty = spread_factor(cluster, len(set(alloc) | set(shards or {})))
    set_stages(cluster, r, stages)
    return r


def profiled_ms(job: Job, gpu_type: str) -> float:
    """A worker's straggler-free compute time (ms) on a GPU of ``gpu_type``: what a logged
    worker time is divided by with ``ratio_to="profiled"``."""
    return job.compute_ms / (job.speed(gpu_type) or math.nan)


def placed_on(cluster: Instance, tj: TraceJob, alloc: dict[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """Server positions, per-server compute times ``a`` and all-reduce time of ``tj`` on
    ``alloc`` (0 for a parameter-server job: its phase is :func:`shards_on`'s)."""
    sps = np.array(sorted(alloc), dtype=np.int64)
    job = problem_job(tj)
    a = np.array([profiled_ms(job, cluster.servers[sp].gpu_type) for sp in sps])
    if not np.isfinite(a).all():
        raise SimulationError(f"job {tj.id!r} was placed on a GPU type it cannot use")
    bw = cluster_of(cluster).bandwidth([cluster.servers[sp].id for sp in sps])
    return sps, a, comm_ms(job, bw, len(sps), cluster.terms_by_bandwidth)


def crossed_states(cluster: Instance, sps: set[int]) -> tuple[int, ...]:
    """The congested domains a job on the servers ``sps`` crosses, as positions in the hidden
    state (``n + k`` for the ``k``-th congested domain, in the dynamics' order)."""
    cong = congestion_of(cluster)
    if not cong.any or len(sps) < 2:
        return ()
    order = {d: k for k, d in enumerate(sorted(cong.laws))}
    crossed = cong.crossed([cluster.servers[sp].id for sp in sorted(sps)])
    return tuple(sorted(len(cluster.servers) + order[d] for d in crossed))


def set_crossing(cluster: Instance, r: Running) -> None:
    """The congested domains ``r`` crosses on its allocation and shards, and the part of its
    push/pull that travels between servers (call whenever it is placed or moved)."""
    r.crossed = crossed_states(cluster, set(r.alloc) | set(r.shards))
    r.ps_cross = np.zeros(len(r.ps_sps))
    if r.crossed and len(r.ps_sps):
        r.ps_cross = r.ps_c - shards_on(cluster, r.tj, r.alloc, r.shards, 0.0)[1]


def domain_names(cluster: Instance) -> list[str]:
    """The congested domains' names in the hidden state's order: ``domain:`` and its switches."""
    cong = congestion_of(cluster)
    cl = cong.cluster
    names = []
    for d in sorted(cong.laws):
        names.append("domain:" + "+".join(sorted(w for w, dd in cl.switch_domain.items() if dd == d)))
    return names


def shards_on(
    cluster: Instance, tj: TraceJob, alloc: dict[int, int], shards: dict[int, int], cong: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """A parameter-server job's shard servers and push/pull times at S = 1, the bandwidth
    that of its workers' and shards' servers together (the snapshot model's formula), its
    traffic between servers ``cong`` times slower."""
    if not shards:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    job = problem_job(tj)
    ps_sps = np.array(sorted(shards), dtype=np.int64)
    bw = cluster_of(cluster).bandwidth([cluster.servers[sp].id for sp in sorted(set(alloc) | set(shards))])
    c = [
        ps_comm_ms(job, shards[sp], alloc.get(sp, 0), bw, cluster.servers[sp].intra_bandwidth_gbps, cong)
        for sp in ps_sps
    ]
    return ps_sps, np.array(c)


def set_stages(cluster: Instance, r: Running, stages: Sequence[Sequence[int]] | None) -> None:
    """A hybrid job's terms on its stage matrix, and every job's ideal time ``T°``."""
    if r.tj.architecture != "hybrid":
        r.ideal_ms = r.penalty * (float(r.a.max()) + r.comm + (float(r.ps_c.max()) if len(r.ps_c) else 0.0))
        return
    if not stages:
        raise SimulationError(f"job {r.tj.id!r} is a hybrid job placed without its stage matrix")
    job = problem_job(r.tj)
    servers, qi, qc, d, spans = stage_parts(cluster, job, [list(row) for row in stages])
    at = {sp: k for k, sp in enumerate(servers)}
    r.stages = tuple(tuple(int(sp) for sp in row) for row in stages)
    r.q_intra = np.array([qi[at[int(sp)]] for sp in r.sps])
    r.q_cross = np.array([qc[at[int(sp)]] for sp in r.sps])
    r.q = np.maximum(r.q_intra, r.q_cross)
    r.sync_intra = max([x for x, span in zip(d, spans) if not span], default=0.0)
    r.sync_cross = max([x for x, span in zip(d, spans) if span], default=0.0)
    r.slots, r.sync = pipeline_slots(job), max(r.sync_intra, r.sync_cross)
    r.ideal_ms = r.penalty * (r.slots * float((r.a + r.q).max()) + r.sync)


def iteration_ms(r: Running, S: np.ndarray) -> float:
    """``r``'s iteration time under the hidden state ``S`` (one slowdown per server, then one
    ``L`` per congested domain): its traffic between servers takes the largest ``L`` it crosses
    times longer."""
    cong = float(S[list(r.crossed)].max()) if r.crossed else 1.0
    q, sync, ps_c = r.q, r.sync, r.ps_c
    if cong > 1.0:  # its transfers between servers, cong times longer
        if r.stages:
            q, sync = np.maximum(r.q_intra, r.q_cross * cong), max(r.sync_intra, r.sync_cross * cong)
        if len(r.ps_sps):
            ps_c = r.ps_c + r.ps_cross * (cong - 1.0)
    t = r.slots * float((r.a * S[r.sps] + q).max()) + sync + r.comm * cong
    if len(r.ps_sps):  # a parameter-server job's push/pull phase, the same draws
        t += float((ps_c * S[r.ps_sps]).max())
    return t * r.penalty if r.penalty != 1.0 else t


def observed(
    r: Running, S: np.ndarray, rng: np.random.Generator, ratio_to: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One logged iteration of ``r``: each worker's server, its time under ``S`` with a
    little measurement noise, and its ratio to the job's median worker or, with ``ratio_to``
    ``"profiled"``, to its straggler-free time there (what the estimator bins); ``None`` for a
    lone worker with nothing to compare to.  A hybrid job shows each group's compute time of
    one microbatch, in group order ``r + dp s`` (the stage-boundary times are the network's)."""
    if r.stages:
        dp = len(r.stages[0])
        sps = np.array([r.stages[g // dp][g % dp] for g in range(len(r.stages) * dp)], dtype=np.int64)
        a_of = dict(zip(r.sps.tolist(), r.a.tolist()))
        a = np.array([a_of[int(sp)] for sp in sps])
    else:
        counts = np.array([r.alloc[int(sp)] for sp in r.sps])
        sps = np.repeat(r.sps, counts)
        a = np.repeat(r.a, counts)
    profiled = ratio_to == "profiled"
    if len(sps) < 2 and not profiled:
        return None
    d = a * S[sps] * np.exp(LOG_NOISE * rng.standard_normal(len(sps)))
    return sps, d, d / (a if profiled else float(np.median(d)))


def advance(r: Running, now: float) -> None:
    """Bring ``r``'s progress to ``now`` at its current iteration time (none while it restarts)."""
    t0 = max(r.t_last, r.paused_until)
    if now > t0:
        done = (now - t0) * 1000.0 / r.T
        r.progress += done
        if r.ideal_ms * (1 + TIE_RTOL) < r.T:
            r.straggled_iters += done
    r.t_last = now


def placement_text(alloc: dict[int, int], server_ids: Sequence[str]) -> str:
    """``server:workers ...`` in server order."""
    return " ".join(f"{server_ids[sp]}:{k}" for sp, k in sorted(alloc.items()))


def held_row(r: Running, now: float, server_ids: Sequence[str]) -> dict[str, Any]:
    """The interval ``r`` held its present GPUs, ending ``now`` (it moves or finishes)."""
    return {"job": r.tj.id, "from_s": r.since, "to_s": now, "placement": placement_text(r.alloc, server_ids)}


def isolated_s(tj: TraceJob) -> float:
    """``tj``'s run time alone on the cluster, straggler-free: the trace's measured duration (at
    its reference placement), else its iterations at its profiled compute time."""
    return float(tj.duration_s) if tj.duration_s is not None else tj.iterations * tj.compute_ms / 1000.0


def finished_row(r: Running, now: float, server_ids: Sequence[str]) -> dict[str, Any]:
    """The per-job row of a job finishing at ``now`` (``jobs/<config>.csv``)."""
    tj = r.tj
    run = r.ran_s + now - r.resumed
    ideal_run = tj.iterations * r.ideal_ms / 1000.0
    return {
        "job": tj.id,
        "workers": tj.workers,
        "iterations": tj.iterations,
        "submit_s": tj.submit_s,
        "start_s": r.start,
        "end_s": now,
        "jct_s": now - tj.submit_s,
        # waiting before its first start, and between its runs
        "queue_s": r.start - tj.submit_s + (r.resumed - r.start - r.ran_s),
        "run_s": run,
        "ideal_run_s": ideal_run,
        "slowdown": run / ideal_run if ideal_run > 0 else 1.0,
        "straggled_iterations": min(r.straggled_iters, float(tj.iterations)),
        "servers": len(r.alloc),
        "moves": r.moves,
        "preemptions": r.preemptions,
        "isolated_s": isolated_s(tj),
        "placement": placement_text(r.alloc, server_ids),
        "shards": " ".join(f"{server_ids[sp]}:{k}" for sp, k in sorted(r.shards.items())),
        # a hybrid job's stage matrix: stages separated by "|", replicas by ","
        "stages": "|".join(",".join(server_ids[sp] for sp in row) for row in r.stages),
    }

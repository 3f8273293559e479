"""A trace's duration is a measurement (DESIGN.md, "A trace's duration is a measurement"): the
job's run, communication included, at the placement it had.  The simulator calls that its
*reference placement*: the gang on the fewest servers of the cluster, within the narrowest
bandwidth domain that holds them.  There, straggler-free, an iteration takes exactly
``T_ref = 1000 * duration / iterations`` ms; its all-reduce there, ``C_ref``, is capped at
``comm_share_max`` of ``T_ref`` by scaling the job's gradient, and ``compute_ms = T_ref - C_ref``.
Any other placement changes the run only through its communication and its slowdowns.

``comm="off"`` makes communication free at every placement (the gradient and activations are
zero, ``compute_ms = T_ref``): the semantics of the simulators that ignore placement."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from placement.errors import InvalidInputError
from placement.model.records import Instance, Job
from placement.problem.rules import comm_ms, gamma_too_low, min_gamma_ms
from placement.problem.topology import cluster_of
from placement.simulation.workload.records import TraceJob

__all__ = ["COMM_SHARE_MAX", "COMM_MODES", "reference_level", "as_measured", "profiles_of", "refuse_low_gamma"]

COMM_SHARE_MAX = 0.48
"""The largest share of a job's measured iteration time its all-reduce may take at its
reference placement.  The median share of gradient synchronisation in the step time of every
multi-node placement Pollux measured (``shared/data/pollux-placements``: 4,283 rows of cifar10,
deepspeech2, imagenet and ncf on 2-4 nodes; per job 0.26, 0.25, 0.19 and 0.71; the 95th
percentile of all rows 0.75).  A model table's gradient at the reference bandwidth may claim
more of a trace's duration than real jobs spend communicating; the cap keeps the rest compute."""

COMM_MODES = ("on", "off", "penalty:F")
"""``SimConfig.comm``: ``on`` (communication costs what the model says), ``off`` (free at
every placement, as in simulators whose job speed depends on the GPU count only) or
``penalty:F`` (free, but a job on two or more servers runs F >= 1 times slower: Blox's and PAL's
semantics, the cluster's ``locality_penalty``)."""


def comm_penalty(comm: str) -> float | None:
    """F of a ``penalty:F`` communication mode, ``None`` for ``on`` and ``off``; raises
    ``ValueError`` naming the mode for anything else."""
    if comm in ("on", "off"):
        return None
    head, _, num = comm.partition(":")
    try:
        f = float(num)
    except ValueError:
        f = math.nan
    if head != "penalty" or not math.isfinite(f) or f < 1.0:
        raise ValueError(f"comm must be on, off or penalty:F with F >= 1, got {comm!r}")
    return f


def _usable(cluster: Instance, tj: TraceJob) -> list[int]:
    """The servers with free GPUs of a type the job may use."""
    job = Job(tj.id, tj.workers, 1.0, tj.gradient_mb, gpu_speed=tj.gpu_speed)
    return [k for k, s in enumerate(cluster.servers) if s.free_gpus > 0 and (job.speed(s.gpu_type) or 0.0) > 0]


def reference_level(cluster: Instance, tj: TraceJob) -> tuple[float, int]:
    """The bottleneck bandwidth ``B`` of ``tj``'s reference placement on ``cluster`` and its
    number of servers: the fewest servers (by free GPUs) that hold its gang, within the
    narrowest bandwidth domain holding that many; one server's own GPU-to-GPU bandwidth when
    one holds it (the best such server's).  ``(0.0, 0)`` when no connected set of servers
    holds the gang."""
    usable = _usable(cluster, tj)
    caps = np.array([cluster.servers[k].free_gpus for k in usable], dtype=np.int64)
    if not len(caps) or caps.sum() < tj.workers:
        return 0.0, 0
    if caps.max() >= tj.workers:
        return max(cluster.servers[k].intra_bandwidth_gbps for k, c in zip(usable, caps) if c >= tj.workers), 1
    k_min = int(np.searchsorted(np.cumsum(np.sort(caps)[::-1]), tj.workers) + 1)
    cl = cluster_of(cluster)
    ok = set(usable)
    best = 0.0
    for d, members in zip(cl.domains, cl.domain_members):
        m = [int(p) for p in members if int(p) in ok]
        top = sorted((cluster.servers[p].free_gpus for p in m), reverse=True)[:k_min]
        if len(top) == k_min and sum(top) >= tj.workers:
            best = max(best, d.bandwidth_gbps)
    return best, (k_min if best > 0 else 0)


def profiles_of(instance: Instance) -> dict[str, tuple[float, float]]:
    """Calibrated profiles by model (``placement calibrate``'s jobs ``<model>-b<batch>``):
    ``(compute_ms, gradient_mb)`` of the median profiled batch size of each model."""
    by_model: dict[str, list[tuple[int, float, float]]] = {}
    for j in instance.jobs:
        model, sep, batch = j.id.rpartition("-b")
        if sep and model and batch.isdigit():
            by_model.setdefault(model, []).append((int(batch), j.compute_ms, j.gradient_mb))
    out = {}
    for model, rows in by_model.items():
        rows.sort()
        _, compute, gradient = rows[(len(rows) - 1) // 2]
        out[model] = (compute, gradient)
    return out


def refuse_low_gamma(cluster: Instance, jobs: Sequence[TraceJob]) -> None:
    """Refuse (:class:`~placement.errors.InvalidInputError`, every job named) the jobs whose
    all-reduce a negative fitted ``gamma`` of ``cluster`` would make negative
    (:func:`~placement.problem.rules.gamma_too_low`)."""
    low = [
        f"job {j.id!r}: the cluster's gamma_ms {t.gamma_ms:g} at {t.bandwidth_gbps:g} Gbit/s would make its all-reduce "
        f"negative (its gradient of {j.gradient_mb:g} MB allows at least {min_gamma_ms(j.gradient_mb, t.bandwidth_gbps):g})"
        for t in cluster.comm_terms
        for j in jobs
        if gamma_too_low(j.workers, j.gradient_mb, j.architecture, t)
    ]
    if low:
        raise InvalidInputError(low[:40] + ([f"... and {len(low) - 40} more"] if len(low) > 40 else []))


def as_measured(
    cluster: Instance,
    jobs: Sequence[TraceJob],
    *,
    comm: str = "on",
    comm_share_max: float = COMM_SHARE_MAX,
    profiles: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[TraceJob], int, int]:
    """``jobs`` as the simulator runs them on ``cluster``, how many had their gradient scaled
    down to the cap, and how many took a calibrated profile.  A job with a measured
    ``duration_s`` whose model has a profile (``profiles``, :func:`profiles_of`) takes its
    fitted compute and gradient, and the iterations that make its reference placement run that
    long; another job with a measured ``duration_s`` gets the compute that makes its reference
    placement run exactly that long, straggler-free; a job without one keeps its own
    ``compute_ms`` and ``gradient_mb``.  With ``comm="off"`` every job communicates nothing
    (and no profile is used).

    >>> from placement.instances import load_bundled
    >>> j = TraceJob("a", 0.0, 2, 1000, 0.0, 40.0, duration_s=100.0)
    >>> [k], scaled, profiled = as_measured(load_bundled("tiny"), [j], comm="off")
    >>> (k.compute_ms, k.gradient_mb, scaled, profiled)
    (100.0, 0.0, 0, 0)
    """
    if comm_penalty(comm) is not None:  # free communication; the penalty is the cluster's
        comm = "off"
    out: list[TraceJob] = []
    scaled = profiled = 0
    level: dict[tuple[int, object], tuple[float, int]] = {}
    terms = cluster.terms_by_bandwidth
    for tj in jobs:
        if tj.duration_s is None:
            out.append(tj if comm == "on" else replace(tj, gradient_mb=0.0, activation_mb=0.0))
            continue
        profile = (profiles or {}).get(tj.model) if comm == "on" and tj.architecture == "allreduce" else None
        if profile is not None:  # measured compute and communication: the duration sets the iterations
            compute, gradient = profile
            key = (tj.workers, tuple(sorted(tj.gpu_speed.items())) if tj.gpu_speed else None)
            if key not in level:
                level[key] = reference_level(cluster, tj)
            bw, k = level[key]
            t_ref = compute + comm_ms(Job("ref", tj.workers, compute, gradient), bw, k, terms)
            if math.isfinite(t_ref) and t_ref > 0:
                iterations = max(1, round(1000.0 * tj.duration_s / t_ref))
                out.append(replace(tj, compute_ms=compute, gradient_mb=gradient, iterations=iterations))
                profiled += 1
                continue
        t_ref = 1000.0 * tj.duration_s / tj.iterations
        gradient = 0.0 if comm == "off" else tj.gradient_mb
        c_ref = 0.0
        if gradient > 0 and tj.workers > 1:
            key = (tj.workers, tuple(sorted(tj.gpu_speed.items())) if tj.gpu_speed else None)
            if key not in level:
                level[key] = reference_level(cluster, tj)
            bw, k = level[key]
            c_ref = comm_ms(Job("ref", tj.workers, t_ref, gradient), bw, k, terms)
            cap = comm_share_max * t_ref
            if c_ref > cap:
                # the ring scales with the gradient, the level's fitted terms do not
                ring = comm_ms(Job("ref", tj.workers, t_ref, gradient), bw, k, {})
                fixed = c_ref - ring if math.isfinite(c_ref) else 0.0
                # a negative gamma needs the gradient it is fitted for, at least (min_gamma_ms)
                least = max(
                    (-t.gamma_ms * t.bandwidth_gbps / 8.0 for t in cluster.comm_terms if t.gamma_ms < 0), default=0.0
                )
                scaled_gradient = gradient * (cap - fixed) / ring if math.isfinite(c_ref) and cap > fixed else 0.0
                if scaled_gradient > 0 and scaled_gradient >= least:
                    gradient, c_ref = scaled_gradient, cap
                else:  # nothing left to scale: no all-reduce at all
                    gradient, c_ref = 0.0, 0.0
                scaled += 1
        out.append(replace(tj, compute_ms=t_ref - c_ref, gradient_mb=gradient))
    return out, scaled, profiled

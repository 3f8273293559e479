"""The one evaluator: every reported number is computed here from (instance, assignment).

Exact expected slowest-worker iteration time for independent discrete slowdowns (product of
CDFs over the merged support points) and for scenario tables, with per-job overrides, fully
vectorised with numpy over all jobs of a placement (the kernel is
:meth:`placement.problem.EvalIndex.expected_max`); a parameter-server job adds its push/pull
phase, a second expected maximum over its shards' servers (:mod:`placement.problem.shards`);
a hybrid-parallel job's pipeline is the kernel with its stage-boundary shifts, times its slots,
plus its stages' data-parallel all-reduce (:mod:`placement.problem.hybrid`).  Congested domains
(:mod:`placement.problem.congestion`): an all-reduce job's communication times ``E[max L]`` of
the domains it crosses; a parameter-server or hybrid job's phases evaluated at each value of
that maximum and weighed by its probability (the congestion is independent of the servers'
draws, so this is exact).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from placement.model.records import Assignment, GpuChoice, Instance, JobReport, Stages
from placement.problem.arrays import arrays_of, job_groups
from placement.problem.congestion import congestion_of
from placement.problem.gpus import choose_gpus, is_factored, worst_factors
from placement.problem.hybrid import best_stages, hybrid_phase, matrix_pos, pipeline_slots
from placement.problem.rules import comm_ms, spread_factor, weight_factor
from placement.problem.shards import ps_phase, ps_straggler
from placement.problem.topology import cluster_of

__all__ = ["Evaluation", "evaluate"]


@dataclass(frozen=True)
class Evaluation:
    """The evaluator's figures for one placement.  ``objective`` is over placed jobs."""

    objective: float
    placed_weight: float
    total_weight: float
    jobs: Mapping[str, JobReport]
    unplaced: tuple[str, ...]
    ideal_parts: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Per job, its ideal time's two terms as added here: the slowest worker's compute at S = 1
    and the communication (all-reduce, or push/pull); they sum to ``ideal_iteration_ms``.  A
    hybrid job's compute is its slots times the slowest group's compute, and its communication
    the rest (pipeline point-to-point and data-parallel sync: :attr:`hybrid_parts`)."""
    hybrid_parts: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)
    """Per hybrid job, its ideal time as ``(compute, pipeline p2p, data-parallel sync)``."""
    gpus: GpuChoice = field(default_factory=dict)
    """The GPUs each job held on the factored servers, as evaluated (given, or by the rule of
    :func:`~placement.problem.gpus.choose_gpus`)."""


def evaluate(
    instance: Instance,
    assignment: Assignment,
    shards: Assignment | None = None,
    stages: Stages | None = None,
    gpus: GpuChoice | None = None,
) -> Evaluation:
    """Exact figures of ``assignment`` and, for parameter-server jobs, their ``shards``, for
    hybrid jobs their ``stages`` (which the validator should have accepted: a parameter-server
    job given no shards is evaluated without its push/pull phase, a lower figure the validator
    refuses; a hybrid job given no matrix is evaluated with
    :func:`~placement.problem.hybrid.best_stages`'s mapping of its allocation).  On servers
    with per-GPU factors, ``gpus`` says which GPUs each job holds (those it does not say are
    chosen by :func:`~placement.problem.gpus.choose_gpus`'s rule); a worker's compute time
    there is scaled by the largest factor among its job's GPUs.

    >>> from placement.instances import load_bundled
    >>> inst = load_bundled("tiny")
    >>> ev = evaluate(inst, {j.id: {inst.servers[0].id: j.workers} for j in inst.jobs[:1]})
    >>> ev.jobs[inst.jobs[0].id].expected_iteration_ms >= ev.jobs[inst.jobs[0].id].ideal_iteration_ms
    True
    """
    idx = arrays_of(instance)
    groups = job_groups(instance, assignment)
    held: GpuChoice = {j: dict(a) for j, a in (gpus or {}).items()}
    fstar: dict[tuple[int, int], float] | None = None
    coefs = None
    if is_factored(instance):  # each job's compute time on the GPUs it holds
        held = choose_gpus(instance, assignment, gpus)
        fstar = worst_factors(instance, held)
        coefs = [[idx.base_a(jp, sp) * fstar.get((jp, sp), 1.0) for sp in sps] for jp, sps in groups]
    e, ideal, strag = idx.expected_max(groups, coefs)
    cluster = cluster_of(instance)
    cong = congestion_of(instance)
    # parameter-server jobs: the push/pull phase, one batched kernel call
    ps_items = []
    for jp, _ in groups:
        job = instance.jobs[jp]
        z = {instance.server_pos[s]: int(k) for s, k in (shards or {}).get(job.id, {}).items() if k > 0}
        if job.is_ps and z:
            x = {instance.server_pos[s]: int(k) for s, k in assignment[job.id].items() if k > 0}
            ps_items.append((jp, x, z))
    ps_e, ps_ideal, ps_bw = ps_phase(instance, ps_items)
    ps_at = {jp: k for k, (jp, _, _) in enumerate(ps_items)}
    # hybrid jobs: their pipeline and stage sync, one batched kernel call
    hy_items = []
    for jp, _ in groups:
        job = instance.jobs[jp]
        if job.is_hybrid:
            given = (stages or {}).get(job.id)
            if given:
                m = matrix_pos(instance, given)
            else:
                x = {instance.server_pos[s]: int(k) for s, k in assignment[job.id].items() if k > 0}
                m, _ = best_stages(instance, jp, x)
            hy_items.append((jp, m))
    hy_e, hy_ideal, hy_strag, hy_terms = hybrid_phase(instance, hy_items, fstar)
    hy_at = {jp: k for k, (jp, _) in enumerate(hy_items)}
    hparts: dict[str, tuple[float, float, float]] = {}
    reports: dict[str, JobReport] = {}
    parts: dict[str, tuple[float, float]] = {}
    objective = 0.0
    placed_w = 0.0
    for g, (jp, sps) in enumerate(groups):
        job = instance.jobs[jp]
        if jp in ps_at:
            k = ps_at[jp]
            _, x, z = ps_items[k]
            bw = ps_bw[k]
            exp_t = float(e[g]) + float(ps_e[k])
            parts[job.id] = (float(ideal[g]), float(ps_ideal[k]))
            ideal_t = parts[job.id][0] + parts[job.id][1]
            p_strag = ps_straggler(instance, jp, x, z, float(ideal[g]), float(ps_ideal[k]), fstar)
            n_servers = len(set(x) | set(z))
        elif jp in hy_at:
            k = hy_at[jp]
            ids = [instance.servers[sp].id for sp in sps]
            bw = cluster.bandwidth(ids)
            exp_t, ideal_t, p_strag = float(hy_e[k]), float(hy_ideal[k]), float(hy_strag[k])
            compute = pipeline_slots(job) * float(
                max(idx.a(jp, sp) if fstar is None else idx.base_a(jp, sp) * fstar.get((jp, sp), 1.0) for sp in sps)
            )
            sync = hy_terms[k].sync_ms
            hparts[job.id] = (compute, ideal_t - sync - compute, sync)
            parts[job.id] = (compute, ideal_t - compute)
            n_servers = len(sps)
        else:
            ids = [instance.servers[sp].id for sp in sps]
            bw = cluster.bandwidth(ids)
            c = comm_ms(job, bw, len(sps), instance.terms_by_bandwidth)
            parts[job.id] = (float(ideal[g]), c)
            exp_t, ideal_t, p_strag = float(e[g]) + c, float(ideal[g]) + c, float(strag[g])
            n_servers = len(sps)
            if cong.any and c > 0:  # its all-reduce times the largest congestion it crosses
                mean_l, slow_l, _ = cong.of(ids)
                exp_t += c * (mean_l - 1.0)
                p_strag = 1.0 - (1.0 - p_strag) * (1.0 - slow_l)
        if instance.locality_penalty != 1.0:  # the whole iteration, on two or more servers
            pen = spread_factor(instance, n_servers)
            exp_t, ideal_t = pen * exp_t, pen * ideal_t
            parts[job.id] = (pen * parts[job.id][0], pen * parts[job.id][1])
        reports[job.id] = JobReport(
            expected_iteration_ms=exp_t,
            ideal_iteration_ms=ideal_t,
            straggler_probability=p_strag,
            bandwidth_gbps=float(bw),
            servers=n_servers,
        )
        objective += weight_factor(instance, job) * exp_t
        placed_w += job.weight
    unplaced = tuple(j.id for j in instance.jobs if j.id not in reports)
    return Evaluation(
        objective=objective,
        placed_weight=placed_w,
        total_weight=float(sum(j.weight for j in instance.jobs)),
        jobs=MappingProxyType(reports),
        unplaced=unplaced,
        ideal_parts=MappingProxyType(parts),
        hybrid_parts=MappingProxyType(hparts),
        gpus=MappingProxyType(held),
    )

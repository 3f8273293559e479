"""Independent oracles for the tests: nothing here shares code with the evaluator."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest

from placement.errors import InvalidInputError
from placement.model import Instance, Slowdown


def widest(instance: Instance, servers: list[str]) -> float:
    """Bottleneck bandwidth of a server set by definition: the largest b such that the
    links of bandwidth >= b connect them all (0.0 if no b does)."""
    if len(set(servers)) == 1:
        return instance.server_by_id[servers[0]].intra_bandwidth_gbps
    best = 0.0
    for b in sorted({link.bandwidth_gbps for link in instance.links}):
        g = nx.Graph()
        g.add_nodes_from(servers)
        g.add_edges_from((e.source, e.target) for e in instance.links if e.bandwidth_gbps >= b)
        comp = nx.node_connected_component(g, servers[0])
        if all(s in comp for s in servers):
            best = b
    return best


def expected_time_by_enumeration(instance: Instance, job_id: str, alloc: dict[str, int]) -> tuple[float, float, float]:
    """E[T_j], T°_j and P(T_j > T°_j) by enumerating the joint outcomes of the job's servers."""
    job = instance.job_by_id[job_id]
    srv = [instance.server_by_id[s] for s in alloc]
    a = [job.compute_ms / job.speed(s.gpu_type) for s in srv]
    bw = widest(instance, list(alloc))
    # a parameter-server job has no all-reduce; without shards its push/pull phase is left
    # out (test_ps.py enumerates it with the shards)
    comm = 0.0 if job.workers == 1 or job.is_ps else 2 * (job.workers - 1) / job.workers * 8 * job.gradient_mb / bw
    # the fitted terms of that bandwidth level, by definition (DESIGN.md, "Calibrated communication")
    terms = [t for t in instance.comm_terms if t.bandwidth_gbps == bw]
    if terms and comm > 0:
        k = len([s for s, n in alloc.items() if n > 0])
        comm += terms[0].alpha_ms * 2 * (job.workers - 1) + (terms[0].gamma_ms * 2 * (k - 1) / k if k > 1 else 0.0)
    ideal = max(a)
    if instance.scenarios is None:
        dists = []
        for s in srv:
            d = job.slowdown.get(s.id, s.slowdown)
            assert isinstance(d, Slowdown)
            dists.append(list(zip(d.values, d.probs)))
        e = p_str = 0.0
        for combo in itertools.product(*dists):
            pr = math.prod(p for _, p in combo)
            t = max(ai * v for ai, (v, _) in zip(a, combo))
            e += pr * t
            p_str += pr * (t > ideal * (1 + 1e-12))
        return e + comm, ideal + comm, p_str
    sc = instance.scenarios
    e = p_str = 0.0
    for k, pk in enumerate(sc.probs):
        vals = []
        for s in srv:
            row = job.slowdown.get(s.id)
            if row is None:
                row = sc.slowdowns.get(s.id, (1.0,) * sc.count)
            vals.append(row[k])
        t = max(ai * v for ai, v in zip(a, vals))
        e += pk * t
        p_str += pk * (t > ideal * (1 + 1e-12))
    return e + comm, ideal + comm, p_str


def joint_outcomes(instance: Instance, job_id: str, servers: list[str]) -> list[tuple[float, dict[str, float]]]:
    """Every joint outcome of ``servers``' slowdowns for job ``job_id`` as ``(probability,
    {server: S})``: the product of the independent distributions (the job's own estimates
    first), or one outcome per scenario."""
    job = instance.job_by_id[job_id]
    if instance.scenarios is None:
        dists = []
        for s in servers:
            d = job.slowdown.get(s, instance.server_by_id[s].slowdown)
            assert isinstance(d, Slowdown)
            dists.append(list(zip(d.values, d.probs)))
        return [
            (math.prod(p for _, p in combo), {s: v for s, (v, _) in zip(servers, combo)})
            for combo in itertools.product(*dists)
        ]
    sc = instance.scenarios
    out = []
    for k, pk in enumerate(sc.probs):
        draw = {}
        for s in servers:
            row = job.slowdown.get(s)
            if row is None:
                row = sc.slowdowns.get(s, (1.0,) * sc.count)
            draw[s] = row[k]
        out.append((pk, draw))
    return out


def problems_of(excinfo: pytest.ExceptionInfo[InvalidInputError]) -> str:
    """The problems of a raised :class:`InvalidInputError`, one per line."""
    return "\n".join(excinfo.value.problems)

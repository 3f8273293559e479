"""placement.problem.hybrid: the terms of a mapping, the canonical orders, the swaps, the rank
order and the completion of a placement's stage matrices."""

from __future__ import annotations

import itertools

import pytest

import placement
from placement.instances.generate import generate
from placement.problem.hybrid import (
    best_stages,
    canonical_stages,
    complete_stages,
    hybrid_phase,
    matrix_ids,
    rank_order_stages,
    stage_terms,
)


def llm() -> placement.Instance:
    return generate(
        racks=2,
        servers_per_rack=4,
        gpus_per_server=8,
        jobs=6,
        job_mix="llm",
        load=0.8,
        hybrid_fraction=1.0,
        hot_fraction=0.4,
        seed=5,
    )


def placed(inst: placement.Instance):
    """Each hybrid job of several groups, its groups dealt round robin over servers of both
    racks (0, 1, 4, 5), with the servers' slowdowns as drawn: mappings that matter."""
    for j in inst.jobs:
        if j.is_hybrid and 1 < j.pp * j.dp <= 8:
            x: dict[int, int] = {}
            for g in range(j.pp * j.dp):
                sp = (0, 1, 4, 5)[g % 4]
                x[sp] = x.get(sp, 0) + j.tp
            yield inst.job_pos[j.id], x


def test_the_terms_follow_the_stage_boundaries_and_the_stages():
    inst = placement.load_bundled("hybrid-tiny")
    (job,) = [j for j in inst.jobs if j.is_hybrid]
    assert (job.tp, job.pp, job.dp) == (2, 2, 2)
    a, b = 0, 2  # two servers in different racks
    intra = inst.servers[a].intra_bandwidth_gbps
    together = stage_terms(inst, job, [[a, b], [a, b]])  # each replica on one server
    assert together.q == [pytest.approx(2 * 8 * job.activation_mb / intra)] * 2
    apart = stage_terms(inst, job, [[a, a], [b, b]])  # each stage on one server
    assert apart.d == [pytest.approx(2 * 0.5 * 8 * job.gradient_mb / 2 / intra)] * 2
    assert apart.q[1] == 0.0  # the last stage sends nothing on
    assert together.sync_ms > apart.sync_ms


def test_best_stages_is_never_worse_than_the_canonical_orders_and_matches_enumeration():
    inst = llm()
    seen = 0
    for jp, x in placed(inst):
        job = inst.jobs[jp]
        cands = canonical_stages(inst, jp, x)
        e, _, _, _ = hybrid_phase(inst, [(jp, m) for m in cands])
        best, best_e = best_stages(inst, jp, x)
        assert best_e <= float(e.min()) * (1 + 1e-12)
        assert hybrid_phase(inst, [(jp, best)])[0][0] == pytest.approx(best_e, rel=1e-12)
        counts = {sp: k // job.tp for sp, k in x.items()}
        assert sorted(sp for row in best for sp in row) == sorted(sp for sp, k in counts.items() for _ in range(k))
        cells = job.pp * job.dp
        if cells <= 8:  # every arrangement: swaps reach the optimum mapping on these
            seq = sorted(sp for sp, k in counts.items() for _ in range(k))
            ms = [
                [list(p[s * job.dp : (s + 1) * job.dp]) for s in range(job.pp)]
                for p in set(itertools.permutations(seq))
            ]
            all_e, _, _, _ = hybrid_phase(inst, [(jp, m) for m in ms])
            assert best_e <= float(all_e.min()) * (1 + 1e-9) + 1e-9, (job.id, best_e, float(all_e.min()))
            seen += 1
    assert seen


def test_rank_order_is_megatrons_over_the_servers_as_given():
    inst = llm()
    job = next(j for j in inst.jobs if j.is_hybrid and j.pp > 1 and j.dp > 1)
    servers = list(range(job.workers // (job.tp * 2) + 1))[: job.pp * job.dp]
    per = dict.fromkeys(servers, 0)
    for g in range(job.pp * job.dp):
        per[servers[g % len(servers)]] += job.tp
    x = {sp: per[sp] for sp in reversed(servers) if per[sp]}  # the order given is kept
    m = rank_order_stages(job, x)
    order = [sp for sp in x for _ in range(x[sp] // job.tp)]
    # rank t + tp (r + dp s): group (s, r) is the (r + dp s)-th group, filled server by server
    for s in range(job.pp):
        for r in range(job.dp):
            assert m[s][r] == order[r + job.dp * s]


def test_complete_stages_maps_whole_groups_only():
    inst = placement.load_bundled("hybrid-tiny")
    sol = placement.solve(inst, "greedy")
    (hid,) = sol.stages
    done = complete_stages(inst, sol.assignment, None)
    assert set(done) == {hid}
    x = {inst.server_pos[s]: k for s, k in sol.assignment[hid].items()}
    assert done[hid] == matrix_ids(inst, best_stages(inst, inst.job_pos[hid], x)[0])
    kept = complete_stages(inst, sol.assignment, sol.stages)
    assert kept[hid] == sol.stages[hid]  # a given matrix is kept as it is
    s0 = next(iter(sol.assignment[hid]))
    broken = {**sol.assignment, hid: {**sol.assignment[hid], s0: sol.assignment[hid][s0] - 1}}
    assert hid not in complete_stages(inst, broken, None)  # not whole groups: the validator says why

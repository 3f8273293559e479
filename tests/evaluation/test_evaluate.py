import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import expected_time_by_enumeration, widest

import placement
from placement.evaluation import evaluate, lower_bound, monte_carlo
from placement.instances.generate import generate
from placement.testing import assignments, instances, shard_placements


@given(st.data())
def test_evaluator_matches_joint_enumeration(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3))
    asg = data.draw(assignments(inst))
    ev = evaluate(inst, asg)
    assert set(ev.jobs) == {j for j, a in asg.items() if a}
    for jid, alloc in asg.items():
        e, ideal, p = expected_time_by_enumeration(inst, jid, alloc)
        r = ev.jobs[jid]
        assert r.expected_iteration_ms == pytest.approx(e, rel=1e-9)
        assert r.ideal_iteration_ms == pytest.approx(ideal, rel=1e-12)
        assert r.straggler_probability == pytest.approx(p, abs=1e-9)
        assert r.bandwidth_gbps == widest(inst, list(alloc))
        assert r.expected_iteration_ms >= r.ideal_iteration_ms * (1 - 1e-12)


@settings(max_examples=15)
@given(st.data())
def test_monte_carlo_agrees_with_exact(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3))
    asg = data.draw(assignments(inst))
    ev = evaluate(inst, asg)
    mc = monte_carlo(inst, asg, samples=20_000, seed=data.draw(st.integers(0, 10**6)))
    for jid, r in ev.jobs.items():
        mean, ci = mc.jobs[jid]
        # 5 standard errors (ci is 1.96 of them), plus float slack for zero-variance jobs
        assert abs(mean - r.expected_iteration_ms) <= 5 / 1.96 * ci + 1e-9 * r.expected_iteration_ms
    assert abs(mc.objective - ev.objective) <= 5 / 1.96 * mc.objective_ci + 1e-9 * max(1.0, ev.objective)


def test_monte_carlo_is_seeded_and_checks_samples():
    inst = placement.load_bundled("demo")
    sol = placement.solve(inst, "greedy")
    a = monte_carlo(inst, sol.assignment, samples=500, seed=3)
    b = monte_carlo(inst, sol.assignment, samples=500, seed=3)
    assert a == b
    with pytest.raises(ValueError, match="samples"):
        monte_carlo(inst, sol.assignment, samples=1)


def test_hand_computed_two_servers():
    inst = placement.instance_from_dict(
        {
            "format": "placement-instance/1",
            "name": "hand",
            "topology": {
                "nodes": [
                    {
                        "id": "a",
                        "kind": "server",
                        "gpus": 1,
                        "gpu_type": "X",
                        "intra_bandwidth_gbps": 100,
                        "slowdown": {"values": [1, 2], "probs": [0.5, 0.5]},
                    },
                    {
                        "id": "b",
                        "kind": "server",
                        "gpus": 1,
                        "gpu_type": "X",
                        "intra_bandwidth_gbps": 100,
                        "slowdown": {"values": [1, 3], "probs": [0.75, 0.25]},
                    },
                    {"id": "t", "kind": "switch"},
                ],
                "edges": [
                    {"source": "a", "target": "t", "bandwidth_gbps": 10},
                    {"source": "b", "target": "t", "bandwidth_gbps": 40},
                ],
            },
            "jobs": [{"id": "j", "workers": 2, "compute_ms": 100, "gradient_mb": 50}],
        }
    )
    r = evaluate(inst, {"j": {"a": 1, "b": 1}}).jobs["j"]
    # max: 100 w.p. 3/8, 200 w.p. 3/8, 300 w.p. 1/4 -> 187.5; all-reduce 2*(1/2)*8*50/10 = 40
    assert r.expected_iteration_ms == pytest.approx(227.5)
    assert r.ideal_iteration_ms == pytest.approx(140.0)
    assert r.straggler_probability == pytest.approx(0.625)
    assert r.bandwidth_gbps == 10.0


def test_objectives_and_placed_weight():
    inst = generate(
        racks=2, servers_per_rack=2, jobs=4, seed=2, objective="weighted_expected_jct", admission="best_effort"
    )
    sol = placement.solve(inst, "greedy")
    ev = evaluate(inst, sol.assignment)
    expect = sum(
        inst.job_by_id[j].weight * inst.job_by_id[j].iterations * r.expected_iteration_ms / 1000
        for j, r in ev.jobs.items()
    )
    assert ev.objective == pytest.approx(expect)
    assert ev.placed_weight == pytest.approx(sum(inst.job_by_id[j].weight for j in ev.jobs))


@given(instances(max_servers=4, max_jobs=3, admission="all"))
def test_lower_bound_is_below_every_placement(inst):
    lb = lower_bound(inst)
    witness = inst.metadata["witness"]
    if len(witness) == len(inst.jobs) and not placement.validate(inst, witness):
        assert lb is not None and lb <= evaluate(inst, witness).objective * (1 + 1e-12)


def test_evaluates_a_thousand_jobs_on_a_thousand_servers():
    """Functional check of the vectorised path at scale (its speed is measured by
    `python -m placement.bench evaluator`, not here)."""
    inst = generate(racks=25, servers_per_rack=40, gpus_per_server=8, jobs=1000, job_mix="small", load=0.5, seed=1)
    sol = placement.solve(inst, "first_fit")
    ev = evaluate(inst, sol.assignment)
    assert len(ev.jobs) == 1000
    # spot-check a few jobs against the single-job path
    for jid in list(ev.jobs)[::97]:
        one = evaluate(inst, {jid: sol.assignment[jid]})
        assert one.jobs[jid] == ev.jobs[jid] or math.isclose(
            one.jobs[jid].expected_iteration_ms, ev.jobs[jid].expected_iteration_ms, rel_tol=1e-12
        )
    assert np.isfinite(ev.objective)


@pytest.mark.parametrize("parameter_servers", [False, True])
@given(data=st.data())
def test_every_job_lower_bound_is_below_every_placement_of_that_job(parameter_servers, data):
    """``job_lower_bound`` (one server, or k >= 2 servers with the spread bound; a
    parameter-server job's push/pull floor) against the exact expected time of any placement
    of the job, its shards included."""
    from placement.evaluation import job_lower_bound

    inst = data.draw(instances(max_servers=5, max_jobs=3, max_gpus=3, parameter_servers=parameter_servers))
    x = data.draw(assignments(inst))
    z = data.draw(shard_placements(inst, x))
    broken = {v.job for v in placement.validate(inst, x, shards=z) if v.kind in ("max_servers", "unreachable")}
    ev = placement.evaluate(inst, x, z)
    for jid, r in ev.jobs.items():
        if jid not in broken:
            lb = job_lower_bound(inst, inst.job_pos[jid])
            assert lb <= r.expected_iteration_ms * (1 + 1e-9) + 1e-9, (jid, lb, r.expected_iteration_ms)


@settings(max_examples=30)
@given(instances(max_servers=4, max_jobs=1, max_gpus=4, hybrid=True, admission="all"))
def test_a_hybrid_jobs_lower_bound_is_below_its_best_placement_and_mapping(inst):
    """``hybrid_lower_bound`` (the one-server case; a stage boundary across servers plus
    every stage's all-reduce at the widest bandwidth a stage may have; a replica's stages on
    one server where one has room) against brute force's optimum over every placement and
    stage mapping of the job."""
    from placement.evaluation import job_lower_bound

    if not inst.jobs or not inst.jobs[0].is_hybrid:
        return
    try:
        oracle = placement.solve(inst, "brute_force", time_limit_s=30)
    except placement.MethodUnavailableError:
        return
    if oracle.status.value != "optimal":
        return
    best = placement.evaluate(inst, oracle.assignment, oracle.shards, oracle.stages).jobs[inst.jobs[0].id]
    lb = job_lower_bound(inst, 0)
    assert lb <= best.expected_iteration_ms * (1 + 1e-9) + 1e-9, (lb, best.expected_iteration_ms)


@pytest.mark.parametrize("gpus, tp", [(2, 1), (4, 2)])
def test_a_hybrid_bound_counts_the_stages_all_reduce_where_a_boundary_crosses_servers(gpus, tp):
    """Four servers in one rack at 25 Gbit/s, a tp x 2 x 2 job of 1 GB: the best placement
    puts each stage on a server of its own (its all-reduce inside a server, the boundary
    across the rack). The bound is that optimum: the crossing case now adds each stage's
    all-reduce at the widest bandwidth a stage may have (it added none, and gave 30 ms)."""
    from placement.evaluation import job_lower_bound
    from placement.model import Instance, Job, Link, Server, Switch

    servers = tuple(Server(f"s{i}", gpus, "A", 300.0) for i in range(4))
    links = (Link("r0", "core", 25.0),) + tuple(Link(f"s{i}", "r0", 25.0) for i in range(4))
    job = Job("j0", 4 * tp, 10.0, 1000.0, architecture="hybrid", tp=tp, pp=2, dp=2, microbatches=2)
    inst = Instance("h", servers, (job,), (Switch("core"), Switch("r0")), links, admission="all")
    oracle = placement.solve(inst, "brute_force", time_limit_s=30)
    assert oracle.objective == pytest.approx(43.333333, rel=1e-6)
    assert job_lower_bound(inst, 0) == pytest.approx(oracle.objective, rel=1e-9)


def _two_racks(slow: tuple[float, ...], gpus: int = 1) -> tuple[tuple, tuple, tuple]:
    """Two racks of two servers (rack links 100 Gbit/s, the core 10), server ``i`` always
    ``slow[i]`` times slower: servers, switches and links."""
    from placement.model import Link, Server, Slowdown, Switch

    servers = tuple(Server(f"s{i}", gpus, "A", 300.0, slowdown=Slowdown((v,), (1.0,))) for i, v in enumerate(slow))
    links = (Link("r0", "core", 10.0), Link("r1", "core", 10.0)) + tuple(
        Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)
    )
    return servers, (Switch("core"), Switch("r0"), Switch("r1")), links


def test_an_all_reduce_bound_prices_each_home_with_its_own_servers():
    """The two fast servers are in two racks: together they all-reduce over the slow core; a
    rack's pair all-reduces fast but waits for its slow server.  The bound takes the least
    over homes of the home's own servers and bandwidth: brute force's optimum, 23 ms (it took
    the two fast servers with the rack's bandwidth: 18 ms)."""
    from placement.evaluation import job_lower_bound
    from placement.model import Instance, Job

    servers, switches, links = _two_racks((1.0, 1.5, 1.0, 1.5))
    inst = Instance("racks", servers, (Job("j0", 2, 10.0, 100.0),), switches, links, admission="all")
    oracle = placement.solve(inst, "brute_force", time_limit_s=30)
    assert oracle.objective == pytest.approx(15.0 + 8.0)  # one rack: 10 x 1.5, then 2 x 1/2 x 8 x 100 / 100
    assert oracle.objective == pytest.approx(23.0)
    assert job_lower_bound(inst, 0) == pytest.approx(oracle.objective, rel=1e-9)


def test_a_hybrid_bound_prices_the_boundary_or_the_stage_across_the_home():
    """A 1 x 2 x 2 job on two racks of two one-GPU servers spans both racks: either each
    stage sits in a rack (then the boundary crosses the slow core) or a stage spans the racks
    (its all-reduce crosses the core).  The bound counted the boundary at the rack's bandwidth
    and the all-reduce at the rack's too (36.4 ms); it is now brute force's optimum, 58 ms (each
    stage in a rack: 3 slots x (10 + 8) + 4)."""
    from placement.evaluation import job_lower_bound
    from placement.model import Instance, Job

    servers, switches, links = _two_racks((1.0, 1.0, 1.0, 1.0))
    job = Job("j0", 4, 10.0, 100.0, architecture="hybrid", tp=1, pp=2, dp=2, microbatches=2, activation_mb=5.0)
    inst = Instance("racks", servers, (job,), switches, links, admission="all")
    oracle = placement.solve(inst, "brute_force", time_limit_s=30)
    assert oracle.objective == pytest.approx(58.0)
    assert job_lower_bound(inst, 0) == pytest.approx(oracle.objective, rel=1e-9)


@given(instances(max_servers=5, max_jobs=1, max_gpus=2), st.integers(1, 5))
def test_the_spread_bound_is_below_the_best_k_servers(inst, k):
    """Against an enumeration of every set of k or more usable servers."""
    import itertools

    from placement.evaluation.bounds import spread_lower_bound
    from placement.problem.arrays import arrays_of

    idx = arrays_of(inst)
    usable = [sp for sp in range(len(inst.servers)) if np.isfinite(idx.job_a(0)[sp]) and inst.servers[sp].free_gpus > 0]
    lb = spread_lower_bound(inst, 0, k)
    if len(usable) < k:
        assert lb == math.inf
        return
    best = min(
        float(idx.expected_max([(0, list(c))])[0][0])
        for size in range(k, len(usable) + 1)
        for c in itertools.combinations(usable, size)
    )
    assert lb <= best * (1 + 1e-9) + 1e-9

"""Congested domains: which domain a switch's congestion lies in, which a job crosses, and the
evaluator exact against enumeration of every joint state (servers and domains) and against Monte
Carlo for parameter-server and hybrid jobs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.evaluation import evaluate, monte_carlo
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.model.records import NO_SLOWDOWN
from placement.problem.arrays import arrays_of
from placement.problem.congestion import congestion_of, max_law
from placement.problem.topology import cluster_of
from placement.testing import assignments, instances

HOT = Slowdown((1.0, 2.0), (0.75, 0.25))


def two_racks(core: Slowdown = NO_SLOWDOWN, rack0: Slowdown = NO_SLOWDOWN, rack1: Slowdown = NO_SLOWDOWN) -> Instance:
    """Two racks of two servers (100 Gbit/s to their switch) under a core (25 Gbit/s)."""
    servers = tuple(Server(f"s{i}", 4, "V100", 300.0) for i in range(4))
    switches = (Switch("core", core), Switch("r0", rack0), Switch("r1", rack1))
    links = tuple(Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)) + (
        Link("r0", "core", 25.0),
        Link("r1", "core", 25.0),
    )
    return Instance("two-racks", servers, (), switches, links)


def test_a_switch_lies_in_the_innermost_domain_holding_it():
    inst = two_racks()
    cl = cluster_of(inst)
    racks = {d.servers: d.index for d in cl.domains}
    assert cl.switch_domain["r0"] == racks[("s0", "s1")] and cl.switch_domain["r1"] == racks[("s2", "s3")]
    assert cl.switch_domain["core"] == racks[("s0", "s1", "s2", "s3")]
    # every link alike: one domain, every switch in it
    flat = inst.replace(links=tuple(Link(k.source, k.target, 100.0) for k in inst.links))
    assert set(cluster_of(flat).switch_domain.values()) == {0} and len(cluster_of(flat).domains) == 1


def test_a_job_crosses_its_bottleneck_domain_and_those_below_holding_its_servers():
    inst = two_racks(core=HOT, rack0=HOT, rack1=HOT)
    c = congestion_of(inst)
    cl = cluster_of(inst)
    r0, r1, core = (cl.switch_domain[w] for w in ("r0", "r1", "core"))
    assert c.crossed(["s0"]) == frozenset()
    assert c.crossed(["s0", "s1"]) == {r0}
    assert c.crossed(["s0", "s2"]) == {core, r0, r1}
    assert c.crossed(["s0", "s1", "s2"]) == {core, r0, r1}
    quiet_core = congestion_of(two_racks(rack0=HOT))
    assert quiet_core.crossed(["s2", "s3"]) == frozenset() and quiet_core.crossed(["s1", "s3"]) == {r0}
    # two independent 25%-hot domains: max is 2 with probability 1 - 0.75^2
    mean, slow, _ = c.of(["s0", "s1", "s2"])  # three of them
    assert slow == pytest.approx(1 - 0.75**3) and mean == pytest.approx(1 + (1 - 0.75**3))


def test_the_law_of_a_maximum_is_the_product_of_cdfs():
    v, p = max_law([(np.array([1.0, 3.0]), np.array([0.5, 0.5])), (np.array([1.0, 2.0]), np.array([0.2, 0.8]))])
    assert v.tolist() == [1.0, 2.0, 3.0] and p == pytest.approx([0.1, 0.4, 0.5])


def test_an_all_reduce_pays_the_congestion_of_what_it_crosses_by_hand():
    inst = two_racks(core=HOT).replace(jobs=(placement.Job("j", 2, 100.0, 100.0),))
    within = evaluate(inst, {"j": {"s0": 1, "s1": 1}}).jobs["j"]
    across = evaluate(inst, {"j": {"s0": 1, "s2": 1}}).jobs["j"]
    c_across = 2 * (2 - 1) / 2 * 8 * 100.0 / 25.0
    assert within.straggler_probability == 0.0 and within.expected_iteration_ms == within.ideal_iteration_ms
    assert across.ideal_iteration_ms == pytest.approx(100.0 + c_across)
    assert across.expected_iteration_ms == pytest.approx(100.0 + 1.25 * c_across)
    assert across.straggler_probability == pytest.approx(0.25)


def _crossed(inst: Instance, servers: list[str]) -> set[int]:
    """The model's rule written out from the domains: the smallest domain holding them, and every
    domain inside it holding one of them."""
    cl = cluster_of(inst)
    if len(servers) < 2:
        return set()
    holding = [d for d in cl.domains if set(servers) <= set(d.servers)]
    if not holding:
        return set()
    top = min(holding, key=lambda d: len(d.servers))
    return {d.index for d in cl.domains if set(d.servers) <= set(top.servers) and set(d.servers) & set(servers)}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_exact_against_every_joint_state_of_servers_and_domains(data):
    inst = data.draw(
        instances(
            min_servers=2,
            max_servers=4,
            max_jobs=3,
            congestion=True,
            scenarios=False,
            overrides=False,
            parameter_servers=False,
        )
    )
    asg = data.draw(assignments(inst))
    ev = evaluate(inst, asg)
    idx = arrays_of(inst)
    laws = congestion_of(inst).laws
    sps = list(range(len(inst.servers)))
    doms = sorted(laws)
    axes = [list(zip(*idx.dists[sp])) for sp in sps] + [list(zip(*laws[d])) for d in doms]
    for jid, rep in ev.jobs.items():
        jp = inst.job_pos[jid]
        on = [inst.server_pos[s] for s, k in asg[jid].items() if k > 0]
        crossed = _crossed(inst, [inst.servers[sp].id for sp in on]) & set(doms)
        comm = ev.ideal_parts[jid][1]
        ideal = rep.ideal_iteration_ms
        mean = slow = 0.0
        for state in itertools.product(*axes):
            p = float(np.prod([pr for _, pr in state]))
            s_of = {sp: state[k][0] for k, sp in enumerate(sps)}
            l_of = {d: state[len(sps) + k][0] for k, d in enumerate(doms)}
            t = max(idx.a(jp, sp) * s_of[sp] for sp in on) + comm * max([l_of[d] for d in crossed], default=1.0)
            mean += p * t
            slow += p * (t > ideal * (1 + 1e-12))
        assert rep.expected_iteration_ms == pytest.approx(mean, rel=1e-9)
        assert rep.straggler_probability == pytest.approx(slow, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_parameter_server_and_hybrid_jobs_agree_with_monte_carlo(data):
    inst = data.draw(
        instances(min_servers=2, max_servers=4, max_jobs=3, congestion=True, hybrid=True, parameter_servers=True)
    )
    asg = data.draw(assignments(inst, complete=True))
    from placement.testing import shard_placements

    shards = data.draw(shard_placements(inst, asg))
    ev = evaluate(inst, asg, shards=shards)
    mc = monte_carlo(inst, asg, shards=shards, samples=20_000, seed=data.draw(st.integers(0, 10**6)))
    for jid, r in ev.jobs.items():
        mean, ci = mc.jobs[jid]
        assert abs(mean - r.expected_iteration_ms) <= 5 / 1.96 * ci + 1e-9 * r.expected_iteration_ms


def test_congestion_round_trips_and_bad_laws_are_refused_by_path(tmp_path):
    inst = two_racks(core=HOT)
    again = placement.instance_from_dict(placement.instance_to_dict(inst))
    assert again.switches == inst.switches
    d = placement.instance_to_dict(inst)
    node = next(n for n in d["topology"]["nodes"] if n["id"] == "core")
    assert node["congestion"] == {"values": [1.0, 2.0], "probs": [0.75, 0.25]}
    node["congestion"] = {"values": [1.0, 0.5], "probs": [0.5, 0.6]}
    with pytest.raises(placement.InvalidInputError) as err:
        placement.instance_from_dict(d)
    text = str(err.value)
    assert "congestion" in text and "sum to 1" in text


def test_an_explanation_says_what_congestion_costs_a_job():
    import dataclasses

    from placement.evaluation.explain import explain

    inst = two_racks(core=HOT).replace(jobs=(placement.Job("j", 2, 100.0, 100.0),))
    sol = placement.solve(inst, "greedy")
    assert explain(inst, sol)["j"]["congestion_share_ms"] == 0.0  # on one server
    across = dataclasses.replace(sol, assignment={"j": {"s0": 1, "s2": 1}})
    e = explain(inst, across)["j"]
    assert e["congestion_share_ms"] == pytest.approx(0.25 * 2 * (2 - 1) / 2 * 8 * 100.0 / 25.0)

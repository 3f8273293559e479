"""The greedy constructions: the plain greedy's candidate search, the quick greedy (``auto``'s
first placement on large fleets) and their helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.evaluation.evaluate import evaluate
from placement.evaluation.validate import validate
from placement.instances.generate import generate
from placement.instances.scaling import SCALING
from placement.methods.greedy import _smallest, greedy_state, quick_greedy
from placement.problem.topology import cluster_of
from placement.solving.options import Options
from placement.testing import check_solution, instances


@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0, np.inf]), min_size=1, max_size=40), st.integers(1, 5))
def test_smallest_is_the_stable_argsort_head(values, k):
    key = np.array(values)
    assert _smallest(key, k).tolist() == np.argsort(key, kind="stable")[:k].tolist()


def test_the_domains_sorted_by_one_key_are_the_lexsort_of_domain_and_score():
    """The greedy's per-domain order (one sort of ``domain << 32 | rank``) is the two-key sort."""
    inst = generate(**dict(SCALING["fleet1g-1000"], pods=2, racks=4, servers_per_rack=8, jobs=10))
    cl = cluster_of(inst)
    concat, _ = cl.domain_concat
    rng = np.random.default_rng(0)
    n = len(inst.servers)
    for _ in range(5):
        score = np.where(rng.random(n) < 0.3, np.inf, rng.integers(0, 6, n).astype(float))
        by_score = np.argsort(score)
        rank = np.empty(n, dtype=np.int64)
        rank[by_score] = np.arange(n)
        keys = np.sort((cl.domain_segment.astype(np.int64) << 32) | rank[concat])
        masked = score[concat]
        assert score[by_score[keys & 0xFFFFFFFF]].tolist() == masked[np.lexsort((masked, cl.domain_segment))].tolist()
        assert cl.domain_bandwidth.tolist() == [d.bandwidth_gbps for d in cl.domains]


def test_the_quick_greedy_places_every_job_close_to_the_plain_greedy():
    inst = generate(**dict(SCALING["fleet1g-1000"], pods=2, racks=4, servers_per_rack=8, jobs=40))
    st_, rounds = quick_greedy(inst, Options(time_limit_s=10))
    assert st_.complete and rounds >= 1
    assert validate(inst, st_.assignment(), shards=st_.shard_assignment()) == []
    quick = evaluate(inst, st_.assignment(), st_.shard_assignment()).objective
    plain = evaluate(inst, greedy_state(inst).assignment()).objective
    assert quick <= 1.1 * plain


@settings(max_examples=25, deadline=None)
@given(inst=instances(max_servers=5, max_jobs=3, max_gpus=4, admission="all"))
def test_auto_by_its_large_fleet_path_is_valid_and_its_bound_below_the_optimum(inst):
    """``auto`` forced down its large-fleet path (quick greedy, the LP seeded with it at a
    coarse class step, the refinement, the price-guided pass, local search) on instances
    brute force solves: the placement is valid and the bound at most the optimum.  (The
    cut-short Lagrangian bound is tested on a fleet where pricing takes rounds:
    ``tests/acceptance/test_scale.py``.)"""
    from placement.methods import auto as auto_module

    oracle = placement.solve(inst, "brute_force", time_limit_s=60)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(auto_module, "AUTO_BRUTE_FORCE_SIZE", -1)
        m.setattr(auto_module, "AUTO_QUICK_SIZE", -1)
        m.setattr(auto_module, "AUTO_EXACT_SIZE", -1)
        m.setattr(auto_module, "AUTO_CLASS_STEPS", ((0.0, 0.05),))
        sol = placement.solve(inst, "auto", time_limit_s=2, seed=0)
    assert sol.stats["path"][0].startswith("auto:quick_greedy")
    if sol.assignment is None:  # no greedy fits this puzzle (at scale no exact model would either)
        assert sol.status.value == "no_solution"
        return
    assert any(step.startswith("auto:transport_bound") for step in sol.stats["path"])
    check_solution(inst, sol)
    assert sol.objective >= oracle.objective * (1 - 1e-9)
    if sol.bound is not None:
        assert sol.bound <= oracle.objective * (1 + 1e-6)


def test_auto_past_the_exact_models_reach_tries_the_price_guided_greedy_when_no_greedy_fits():
    """A puzzle no greedy solves (found by hypothesis: s0 unlinked, two 2-worker jobs that must
    share s2): with the exact model out of reach, ``auto`` tries the greedy guided by the LP's
    prices before it gives up, and says so."""
    from placement.methods import auto as auto_module
    from placement.model import Instance, Job, Link, Server, Switch

    servers = tuple(Server(f"s{i}", g, "A", 300.0) for i, g in enumerate((1, 1, 2, 1)))
    jobs = (
        Job("j0", 1, 10.0, 0.0),
        Job("j1", 2, 10.0, 0.0, allowed_servers=("s0", "s1", "s2")),
        Job("j2", 2, 10.0, 0.0, allowed_servers=("s0", "s2", "s3")),
    )
    links = (Link("r0", "core", 25.0), *(Link(f"s{i}", "r0", 25.0) for i in (1, 2, 3)))
    inst = Instance("puzzle", servers, jobs, (Switch("core"), Switch("r0")), links, admission="all")
    assert placement.solve(inst, "brute_force").status.value == "optimal"
    with pytest.MonkeyPatch.context() as m:
        for name in ("AUTO_BRUTE_FORCE_SIZE", "AUTO_QUICK_SIZE", "AUTO_EXACT_SIZE"):
            m.setattr(auto_module, name, -1)
        sol = placement.solve(inst, "auto", time_limit_s=2, seed=0)
    assert sol.status.value == "no_solution"
    assert sol.stats["path"][-1].startswith("auto:price_guided_rescue")
    assert placement.solve(inst, "auto", time_limit_s=2, seed=0).status.value == "optimal"  # within reach


def test_auto_stops_when_the_greedy_meets_the_simple_bound():
    """One 4-worker job, a calm server with room for it and a slow one: the greedy's
    placement meets the simple bound, so ``auto`` stops there, proven optimal (as brute
    force agrees), in either admission."""
    from placement.model import Instance, Job, Link, Server, Slowdown, Switch

    servers = (
        Server("slow", 8, "A100", 2400.0, slowdown=Slowdown((1.0, 3.0), (0.5, 0.5))),
        Server("calm", 8, "A100", 2400.0),
    )
    links = tuple(Link(s.id, "tor", 100.0) for s in servers)
    from placement.methods import auto as auto_module

    for admission in ("all", "best_effort"):
        inst = Instance("one", servers, (Job("j", 4, 100.0, 10.0),), (Switch("tor"),), links, admission=admission)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(auto_module, "AUTO_BRUTE_FORCE_SIZE", -1)  # past brute force's reach
            sol = placement.solve(inst, "auto", time_limit_s=5)
        assert "auto:greedy meets the simple bound" in sol.stats["path"]
        assert sol.status.value == "optimal" and sol.assignment == {"j": {"calm": 4}}
        assert sol.objective == pytest.approx(placement.solve(inst, "brute_force").objective)


def test_auto_without_proof_skips_the_exact_model_and_still_places_validly():
    """``prove=False`` (a simulation's decisions): ``auto`` never enters an exact backend,
    returns a valid placement no worse than the greedy's, and claims no optimality it did
    not prove; with ``prove=True`` the same instance goes through the exact model."""
    inst = placement.load_bundled("library/small/hot")
    proved = placement.solve(inst, "auto", time_limit_s=5, seed=1)
    quick = placement.solve(inst, "auto", time_limit_s=5, seed=1, prove=False)
    greedy_sol = placement.solve(inst, "greedy", seed=1)
    assert any(step.startswith("auto:milp") or step.startswith("auto:cpsat") for step in proved.stats["path"])
    assert "auto:exact skipped (prove=False)" in quick.stats["path"]
    assert not any(step.startswith("auto:milp") or step.startswith("auto:cpsat") for step in quick.stats["path"])
    assert not validate(inst, quick.assignment, quick.shards)
    assert quick.objective <= greedy_sol.objective * (1 + 1e-9)
    if quick.status.value == "optimal":  # only a bound that the heuristics' own LP proves
        assert quick.bound is not None and quick.bound >= quick.objective * (1 - 1e-6)

"""Congested domains in the exact models: the MILP exact against brute force; a model that does
not price a job's congestion claims nothing for it, and every bound stays below the optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import placement
from placement.model import Instance, Job, Link, Server, Slowdown, Status, Switch
from placement.problem.congestion import congestion_of
from placement.solving import REGISTRY
from placement.testing import check_solution, instances

HOT = Slowdown((1.0, 2.0), (0.75, 0.25))

MILPS = [m.name for m in REGISTRY if m.kind == "exact" and m.name.startswith("milp") and m.available]
EXACT = [*MILPS, "cpsat"]


def _against_the_oracle(inst, exact: tuple[str, ...] = tuple(EXACT)):
    """``exact``: the methods that must reach the oracle's status and optimum; every other
    exact method must be honest (its claim true, its bound below the optimum)."""
    oracle = placement.solve(inst, "brute_force", time_limit_s=60)
    check_solution(inst, oracle)
    for name in exact:
        sol = placement.solve(inst, name, time_limit_s=30)
        check_solution(inst, sol)
        if name == "cpsat" and oracle.status == Status.OPTIMAL and sol.status == Status.FEASIBLE:
            # its 1e-4 probability units can leave the exact gap above tolerance: conservative
            assert "above tolerance" in sol.stats.get("message", ""), sol.stats
        else:
            assert sol.status == oracle.status, (name, sol.stats)
        if oracle.objective is not None:
            assert sol.objective == pytest.approx(oracle.objective, rel=1e-4), (name, sol.stats)
            if sol.bound is not None:
                assert sol.bound <= oracle.objective * (1 + 1e-6) + 1e-9, name
            if sol.status == Status.OPTIMAL and oracle.stats.get("placed_weight") == sol.stats.get("placed_weight"):
                # the model's own optimum is the true one (not only the start it was handed)
                assert sol.bound == pytest.approx(oracle.objective, rel=1e-4), (name, sol.stats)
    for spec in REGISTRY:
        if spec.kind != "exact" or spec.name in exact or spec.name == "brute_force" or not spec.available:
            continue
        sol = placement.solve(inst, spec.name, time_limit_s=30)
        check_solution(inst, sol)
        if oracle.objective is not None and sol.objective is not None:
            assert sol.objective >= oracle.objective * (1 - 1e-6) - 1e-9, spec.name
            if sol.status == Status.OPTIMAL:  # claimed: then it is
                assert sol.objective == pytest.approx(oracle.objective, rel=1e-4), (spec.name, sol.stats)
            if sol.bound is not None:
                assert sol.bound <= oracle.objective * (1 + 1e-6) + 1e-9, spec.name


@settings(max_examples=25, deadline=None)
@given(
    instances(
        min_servers=2,
        max_servers=4,
        max_jobs=3,
        max_gpus=3,
        parameter_servers=False,
        comm_terms=False,
        congestion=True,
    )
)
def test_exact_models_with_congested_domains_match_brute_force(inst):
    _against_the_oracle(inst)


@settings(max_examples=10, deadline=None)
@given(instances(min_servers=2, max_servers=3, max_jobs=2, max_gpus=2, parameter_servers=True, congestion=True))
def test_parameter_server_jobs_on_congested_domains_are_claimed_only_when_true(inst):
    """The models price a parameter-server job's push/pull phase without its congestion: they
    claim optimality only when the exact gap allows it, and their bounds stay valid."""
    _against_the_oracle(inst, exact=())


def test_a_hot_rack_sends_a_job_to_a_quiet_one():
    """Two racks of two 4-GPU servers under a core; a 6-worker job must span two servers.  Rack
    1's servers are slowed now and then (E[max] 101.9 ms against 100), rack 0's switch is hot
    (L = 3 a quarter of the time on its 6.67 ms all-reduce: +3.33 ms): every method that prices
    congestion sends the job to rack 1, and the exact models prove it."""
    hot = Slowdown((1.0, 3.0), (0.75, 0.25))
    slowish = Slowdown((1.0, 1.1), (0.9, 0.1))
    servers = tuple(Server(f"s{i}", 4, "V100", 300.0, slowdown=slowish if i >= 2 else Slowdown()) for i in range(4))
    links = tuple(Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)) + (Link("r0", "c", 25.0), Link("r1", "c", 25.0))
    inst = Instance("racks", servers, (Job("j", 6, 100.0, 50.0),), (Switch("c", hot), Switch("r0", hot)), links)
    assert congestion_of(inst).any
    quiet = inst.replace(switches=(Switch("c"), Switch("r0")))
    assert set(placement.solve(quiet, "brute_force").assignment["j"]) == {"s0", "s1"}
    for name in [*EXACT, "brute_force", "greedy", "auto"]:
        sol = placement.solve(inst, name, time_limit_s=30)
        assert set(sol.assignment["j"]) == {"s2", "s3"}, (name, sol.assignment)
        assert sol.objective == pytest.approx(100 * (1 + 0.1 * (1 - 0.81)) + 2 * 5 / 6 * 8 * 50 / 100)
        if name != "greedy":
            assert sol.status == Status.OPTIMAL, name
            assert sol.bound == pytest.approx(sol.objective), name


def test_a_model_beaten_by_its_start_claims_nothing(monkeypatch):
    """A MILP that misprices (here: its congestion rows dropped) returns the greedy start when the
    start is truly better, and then may not call it optimal: its bound is below the true optimum."""
    import placement.formulations.milp as milp

    hot = Slowdown((1.0, 3.0), (0.75, 0.25))
    slowish = Slowdown((1.0, 1.1), (0.9, 0.1))
    servers = tuple(Server(f"s{i}", 4, "V100", 300.0, slowdown=slowish if i >= 2 else Slowdown()) for i in range(4))
    links = tuple(Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)) + (Link("r0", "c", 25.0), Link("r1", "c", 25.0))
    inst = Instance("racks", servers, (Job("j", 6, 100.0, 50.0),), (Switch("c", hot), Switch("r0", hot)), links)
    monkeypatch.setattr(milp, "milp_congestion", lambda *a, **k: 0)
    for name in MILPS:
        sol = placement.solve(inst, name, time_limit_s=30)
        assert set(sol.assignment["j"]) == {"s2", "s3"}  # greedy's, which prices congestion
        assert sol.status == Status.FEASIBLE and sol.bound is not None and sol.bound < sol.objective

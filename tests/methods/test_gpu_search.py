"""GPU-level local search (``auto``'s last step on instances with per-GPU factors): it prices
each job's term as the evaluator does, never worsens a placement, keeps it valid, and finds
what server-level pricing cannot: a spread over the fastest GPUs, a server whose free GPUs are
all fast."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

import placement
from placement.evaluation import evaluate, validate
from placement.formats import instance_from_dict
from placement.methods.gpu_search import _Search, gpu_search
from placement.methods.greedy import greedy
from placement.problem.rules import weight_factor
from placement.solving.options import Options
from placement.testing import instances


def _cluster(factors: list[list[float]], penalty: float = 1.0, jobs: list[dict] | None = None):
    nodes = [
        {
            "id": f"s{i}",
            "kind": "server",
            "gpus": len(f),
            "gpu_type": "V100",
            "intra_bandwidth_gbps": 300,
            "gpu_slowdowns": f,
        }
        for i, f in enumerate(factors)
    ]
    return instance_from_dict(
        {
            "format": "placement-instance/1",
            "name": "fast-gpus",
            "locality_penalty": penalty,
            "topology": {
                "nodes": [*nodes, {"id": "sw", "kind": "switch"}],
                "edges": [{"source": n["id"], "target": "sw", "bandwidth_gbps": 25} for n in nodes],
            },
            "jobs": jobs or [{"id": "a", "workers": 4, "compute_ms": 100, "gradient_mb": 0}],
        }
    )


def _never() -> bool:
    return False


@pytest.mark.parametrize(("penalty", "spread"), [(1.0, True), (2.0, True), (4.0, False)])
def test_a_job_spreads_over_the_fastest_gpus_while_the_penalty_is_below_the_slow_gpu(penalty, spread):
    # each server: three GPUs at 1 and one at 3; one server costs 300 ms, two servers 100 x F
    inst = _cluster([[1, 1, 1, 3], [1, 1, 1, 3]], penalty)
    x, gpus = gpu_search(inst, {"a": {"s0": 4}}, None, _never)
    assert not validate(inst, x, gpus=gpus)
    got = evaluate(inst, x, gpus=gpus).objective
    assert got == pytest.approx(min(300.0, 100.0 * penalty))
    assert (len(x["a"]) > 1) is spread
    if spread:
        assert all(3 not in ids for ids in gpus["a"].values())
    # auto finds it too; the floor-priced greedy does not
    assert placement.solve(inst, "auto", seed=0).objective == pytest.approx(got)
    g = greedy(inst, Options(time_limit_s=1.0))
    assert evaluate(inst, g.assignment).objective >= got


def test_a_job_moves_to_the_server_whose_free_gpus_are_all_fast():
    # s0: one fast GPU and three slow (its floor looks as good as s1's); s1: four fast
    inst = _cluster([[0.9, 1.5, 1.5, 1.5], [1.0, 1.0, 1.0, 1.0]], 1.7)
    x, gpus = gpu_search(inst, {"a": {"s0": 4}}, None, _never)
    assert x == {"a": {"s1": 4}}
    assert evaluate(inst, x, gpus=gpus).objective == pytest.approx(100.0)


def test_two_jobs_swap_gpus_when_their_terms_together_fall():
    # a (slow iterations) holds the slow GPU, b (fast iterations) the fast one: swapping them
    # lowers a's term by more than it raises b's
    jobs = [
        {"id": "a", "workers": 1, "compute_ms": 1000, "gradient_mb": 0},
        {"id": "b", "workers": 1, "compute_ms": 10, "gradient_mb": 0},
    ]
    inst = _cluster([[2.0], [1.0]], 1.0, jobs)
    start = {"a": {"s0": 1}, "b": {"s1": 1}}
    x, gpus = gpu_search(inst, start, None, _never)
    assert x == {"a": {"s1": 1}, "b": {"s0": 1}}
    assert evaluate(inst, x, gpus=gpus).objective == pytest.approx(1000.0 + 20.0)


@settings(max_examples=25, deadline=None)
@given(
    instances(
        max_servers=4,
        max_jobs=4,
        max_gpus=4,
        parameter_servers=False,
        gpu_factors=True,
        locality_penalty=True,
        congestion=True,
    )
)
def test_it_prices_as_the_evaluator_never_worsens_and_stays_valid(inst):
    inst = inst.replace(admission="all")
    start = greedy(inst, Options(time_limit_s=1.0)).assignment
    if start is None or len(start) < len(inst.jobs):
        return
    before = evaluate(inst, start)
    x, gpus = gpu_search(inst, start, None, _never)
    assert not validate(inst, x, gpus=gpus)
    after = evaluate(inst, x, gpus=gpus)
    assert after.objective <= before.objective * (1 + 1e-9) + 1e-9
    # each movable job's term as the search priced it is the evaluator's
    s = _Search(inst, x, gpus, frozenset())
    for jp in s.movable:
        job = inst.jobs[jp]
        rep = after.jobs[job.id]
        if math.isfinite(s.cost_of[jp]):
            assert s.cost_of[jp] == pytest.approx(weight_factor(inst, job) * rep.expected_iteration_ms)

"""PAL and PM-First (SC'24) as peers' methods: performance classes by k-means, PM-First's
fastest-class-first pick, PAL's locality rule, validity on random instances."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import placement
from placement.errors import MethodUnavailableError
from placement.formats import instance_from_dict
from placement.methods.pal import class_factors
from placement.testing import check_solution, instances

pytest.importorskip("sklearn")


def _cluster(factors, jobs, penalty=1.0):
    """Servers of 4 GPUs under one switch with the given per-GPU factors."""
    nodes = [
        {
            "id": f"n{k}",
            "kind": "server",
            "gpus": 4,
            "gpu_type": "V100",
            "intra_bandwidth_gbps": 300,
            "gpu_slowdowns": f,
        }
        for k, f in enumerate(factors)
    ]
    doc = {
        "format": "placement-instance/1",
        "name": "pal",
        "topology": {
            "nodes": nodes + [{"id": "sw", "kind": "switch"}],
            "edges": [{"source": n["id"], "target": "sw", "bandwidth_gbps": 25} for n in nodes],
        },
        "jobs": jobs,
        "admission": "best_effort",
    }
    if penalty != 1.0:
        doc["locality_penalty"] = penalty
    return instance_from_dict(doc)


def _job(jid, w):
    return {"id": jid, "workers": w, "compute_ms": 100, "gradient_mb": 0}


def test_performance_classes_are_centroids_over_the_median_centroid_and_an_outlier_stands_alone():
    slow = [1.0, 1.0, 1.0, 2.8]  # one outlier: k = 3
    inst = _cluster([[0.9, 0.91, 0.92, 0.9], [1.0, 1.01, 1.0, 1.02], [1.0, 1.0, 0.99, 1.0], slow], [_job("a", 1)])
    sf = class_factors(inst, None)
    assert len(set(sf.values())) == 3
    assert sf[(3, 3)] == max(sf.values()) and [k for k, v in sf.items() if v == sf[(3, 3)]] == [(3, 3)]
    assert sorted(set(sf.values()))[1] == pytest.approx(1.0)  # the median centroid is the unit


def test_pm_first_takes_the_fastest_class_across_servers_and_pal_keeps_a_job_on_one_server():
    # two classes (k = 2): the fast GPUs (0.8) are split 2 + 2 over n0 and n1; the rest are one class
    fast = 0.8
    inst = _cluster([[fast, fast, 1.05, 1.05], [fast, fast, 1.05, 1.05], [1.0, 1.0, 1.0, 1.0]], [_job("a", 4)])
    sf = class_factors(inst, None)
    assert len(set(sf.values())) == 2 and sf[(0, 2)] == sf[(2, 0)]
    pm = placement.solve(inst, "pm_first")
    assert dict(pm.assignment["a"]) == {"n0": 2, "n1": 2} and pm.gpus["a"] == {"n0": (0, 1), "n1": (0, 1)}
    # T_w (the slow class: four on one server) < 1.7 x T_a (the fast class): one server, the first
    # of those with most such GPUs
    pal = placement.solve(inst, "pal")
    assert dict(pal.assignment["a"]) == {"n0": 4}
    # with a penalty small enough, PAL spreads over the fast class as PM-First does
    near = inst.replace(locality_penalty=1.05)
    assert dict(placement.solve(near, "pal").assignment["a"]) == {"n0": 2, "n1": 2}
    # the evaluator charges the instance's penalty to the spread placement
    spread = placement.evaluate(near, {"a": {"n0": 2, "n1": 2}}, gpus={"a": {"n0": (0, 1), "n1": (0, 1)}})
    assert spread.jobs["a"].expected_iteration_ms == pytest.approx(100 * 1.05 * fast)


def test_the_class_prefix_is_resorted_and_jobs_that_do_not_fit_are_skipped():
    jobs = [
        {**_job("b1", 2), "app_class": "b"},
        {**_job("a1", 2), "app_class": "a"},
        {**_job("big", 9)},
    ]
    inst = _cluster([[0.9, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], jobs)
    sol = placement.solve(inst, "pm_first")
    assert "big" in sol.unplaced and set(sol.assignment) == {"a1", "b1"}
    assert 0 in sol.gpus["a1"]["n0"]  # class a picks first: it gets the fast GPU 0 of n0


def test_hybrid_jobs_are_refused():
    inst = placement.load_bundled("hybrid-tiny")
    with pytest.raises(MethodUnavailableError, match="hybrid"):
        placement.solve(inst, "pal")


@settings(max_examples=25, deadline=None)
@given(instances(max_servers=4, max_jobs=4, max_gpus=4, parameter_servers=None, gpu_factors=True))
def test_pal_and_pm_first_give_valid_placements(inst):
    for method in ("pal", "pm_first"):
        check_solution(inst, placement.solve(inst, method))

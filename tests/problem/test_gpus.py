"""Per-GPU factors (DESIGN.md, "Per-GPU factors"): the format, the evaluator against Monte
Carlo and a hand computation, the validator, the GPU rule, and the exact models against brute
force with factors and application classes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings

import placement
from placement.errors import InstanceError
from placement.formats import instance_from_dict, instance_to_dict, solution_from_dict, solution_to_dict
from placement.model.records import Status
from placement.problem.gpus import choose_gpus, counts_of_ids, gpu_classes, ids_of_counts, worst_factors
from placement.solving.registry import REGISTRY
from placement.testing import check_solution, instances

EXACT = [m.name for m in REGISTRY if m.kind == "exact" and m.name != "brute_force" and m.available]


def _doc(**over):
    """Two 4-GPU servers under one switch: s0 has a slow GPU 3 for every class and, for class
    ``bert``, a slow GPU 0; s1 has no factors but a slower slowdown law."""
    d = {
        "format": "placement-instance/1",
        "name": "gpus",
        "topology": {
            "nodes": [
                {
                    "id": "s0",
                    "kind": "server",
                    "gpus": 4,
                    "gpu_type": "V100",
                    "intra_bandwidth_gbps": 300,
                    "gpu_slowdowns": {"*": [1.0, 0.95, 1.0, 1.2], "bert": [1.3, 1.0, 1.0, 1.0]},
                    "slowdown": {"values": [1.0, 2.0], "probs": [0.9, 0.1]},
                },
                {
                    "id": "s1",
                    "kind": "server",
                    "gpus": 4,
                    "gpu_type": "V100",
                    "intra_bandwidth_gbps": 300,
                    "slowdown": {"values": [1.0, 1.5], "probs": [0.7, 0.3]},
                },
                {"id": "tor", "kind": "switch"},
            ],
            "edges": [
                {"source": "s0", "target": "tor", "bandwidth_gbps": 25},
                {"source": "s1", "target": "tor", "bandwidth_gbps": 25},
            ],
        },
        "jobs": [{"id": "a", "workers": 2, "compute_ms": 100, "gradient_mb": 0}],
    }
    d.update(over)
    return d


def test_the_format_round_trips_and_refuses_bad_factors_by_path():
    inst = instance_from_dict(_doc())
    s0 = inst.server_by_id["s0"]
    assert s0.gpu_factors(None) == (1.0, 0.95, 1.0, 1.2) and s0.gpu_factors("bert") == (1.3, 1.0, 1.0, 1.0)
    assert instance_from_dict(instance_to_dict(inst)) == inst
    bad = _doc()
    bad["topology"]["nodes"][0]["gpu_slowdowns"] = {"*": [1.0, 1.0]}
    bad["topology"]["nodes"][1]["used_gpus"] = [0, 7]
    bad["topology"]["nodes"][1]["gpu_slowdowns"] = [1.0, 0.0, 1.0, 1.0]
    with pytest.raises(InstanceError) as e:
        instance_from_dict(bad)
    text = str(e.value)
    assert "topology.nodes[0].gpu_slowdowns.* must have 4 factors (one per GPU), got 2" in text
    assert "topology.nodes[1].used_gpus[1] names GPU 7, but the server has 4" in text
    assert "topology.nodes[1].gpu_slowdowns must be a list of factors > 0" in text


def test_the_evaluator_scales_by_the_slowest_gpu_held_exactly():
    inst = instance_from_dict(_doc())
    # GPUs 1 and 3 of s0: the slowest is 1.2, E[max] = 100 * 1.2 * E[S] = 120 * 1.1
    ev = placement.evaluate(inst, {"a": {"s0": 2}}, gpus={"a": {"s0": (1, 3)}})
    assert ev.jobs["a"].expected_iteration_ms == pytest.approx(132.0)
    assert ev.jobs["a"].ideal_iteration_ms == pytest.approx(120.0)
    assert ev.jobs["a"].straggler_probability == pytest.approx(0.1)
    # the rule takes the two fastest free GPUs (0.95 and 1.0)
    ev = placement.evaluate(inst, {"a": {"s0": 2}})
    assert ev.gpus["a"]["s0"] == (0, 1) and ev.jobs["a"].expected_iteration_ms == pytest.approx(110.0)
    # a bert job's factors are its class's: GPU 0 is its slow one
    bert = instance_from_dict(
        _doc(jobs=[{"id": "a", "workers": 2, "compute_ms": 100, "gradient_mb": 0, "app_class": "bert"}])
    )
    assert placement.evaluate(bert, {"a": {"s0": 2}}).gpus["a"]["s0"] == (1, 2)
    assert placement.evaluate(bert, {"a": {"s0": 2}}, gpus={"a": {"s0": (0, 1)}}).jobs["a"].expected_iteration_ms == (
        pytest.approx(143.0)
    )


def test_with_every_factor_one_nothing_changes():
    plain = instance_from_dict(_doc())
    ones = dataclasses.replace(plain.servers[0], gpu_slowdowns={"*": (1.0,) * 4})
    flat = plain.replace(servers=(ones, plain.servers[1]), jobs=plain.jobs * 1)
    no_factors = plain.replace(servers=(dataclasses.replace(ones, gpu_slowdowns={}), plain.servers[1]))
    for method in ["greedy", "brute_force", *EXACT]:
        a, b = placement.solve(flat, method), placement.solve(no_factors, method)
        assert a.objective == pytest.approx(b.objective, rel=1e-12) and dict(a.assignment) == dict(b.assignment)
        assert not a.gpus  # nothing to choose: no GPU is written


def test_the_validator_checks_the_gpus_named():
    d = _doc()
    d["topology"]["nodes"][0]["used_gpus"] = [2]
    inst = instance_from_dict(d)
    two = instance_from_dict({**d, "jobs": d["jobs"] + [{"id": "b", "workers": 1, "compute_ms": 5, "gradient_mb": 0}]})
    kinds = [v.message for v in placement.validate(inst, {"a": {"s0": 2}}, gpus={"a": {"s0": (2, 9)}})]
    assert any("which is held" in m for m in kinds) and any("GPUs [9]" in m for m in kinds)
    assert placement.validate(inst, {"a": {"s0": 2}}, gpus={"a": {"s0": (0,)}})[0].kind == "gpus"
    assert placement.validate(inst, {"a": {"s0": 2}}, gpus={"a": {"s1": (0, 1)}})
    clash = placement.validate(two, {"a": {"s0": 2}, "b": {"s0": 1}}, gpus={"a": {"s0": (0, 1)}, "b": {"s0": (1,)}})
    assert any("named by jobs 'a' and 'b'" in v.message for v in clash)
    assert not placement.validate(inst, {"a": {"s0": 2}}, gpus={"a": {"s0": (0, 3)}})


def test_the_rule_gives_the_fastest_gpus_to_the_job_with_most_at_stake():
    d = _doc(
        jobs=[
            {"id": "light", "workers": 2, "compute_ms": 10, "gradient_mb": 0},
            {"id": "heavy", "workers": 2, "compute_ms": 100, "gradient_mb": 0},
        ]
    )
    inst = instance_from_dict(d)
    got = choose_gpus(inst, {"light": {"s0": 2}, "heavy": {"s0": 2}})
    assert got == {"heavy": {"s0": (0, 1)}, "light": {"s0": (2, 3)}}
    assert worst_factors(inst, got) == {(0, 0): 1.2}  # heavy holds factors 1.0 and 0.95: absent, 1
    classes = {0: [ids for ids, _ in gpu_classes(inst, 0)]}
    counts = counts_of_ids(inst, classes, got)  # GPUs 0 and 2 are one class: counts, not ids, round-trip
    assert counts_of_ids(inst, classes, ids_of_counts(inst, classes, counts)) == counts
    assert sorted(sum(counts.values()) for _ in [0]) == [4]


def test_exact_models_choose_gpus_where_the_rule_cannot():
    """Two jobs on one server, each slow on another GPU (application classes): the rule's
    order gives the heavy job its fastest GPUs and leaves the other its slow one; the exact
    models and brute force swap them."""
    d = _doc(
        jobs=[
            {"id": "r", "workers": 2, "compute_ms": 100, "gradient_mb": 0, "allowed_servers": ["s0"]},
            {
                "id": "b",
                "workers": 2,
                "compute_ms": 90,
                "gradient_mb": 0,
                "app_class": "bert",
                "allowed_servers": ["s0"],
            },
        ]
    )
    d["topology"]["nodes"][0]["gpu_slowdowns"] = {"*": [1.0, 1.0, 1.1, 1.2], "bert": [1.0, 1.0, 1.3, 1.3]}
    inst = instance_from_dict(d)
    # the rule: r (more at stake) takes GPUs 0 and 1, b is left 1.3: 1.1 (100 + 117) = 238.7;
    # r on 2 and 3 (1.2), b on 0 and 1 (1.0): 1.1 (120 + 90) = 231
    ruled = placement.evaluate(inst, {"r": {"s0": 2}, "b": {"s0": 2}}).objective
    assert ruled == pytest.approx(238.7)
    oracle = placement.solve(inst, "brute_force")
    assert oracle.status == Status.OPTIMAL and oracle.objective == pytest.approx(231.0)
    assert oracle.gpus["r"]["s0"] == (2, 3) and oracle.gpus["b"]["s0"] == (0, 1)
    for method in EXACT:
        sol = placement.solve(inst, method, time_limit_s=20)
        check_solution(inst, sol)
        assert sol.objective == pytest.approx(oracle.objective, rel=1e-6), method
    # the driver's exchanges give any method's placement the better split (the rule alone does not)
    assert placement.solve(inst, "greedy").objective == pytest.approx(231.0)
    back = solution_from_dict(json.loads(json.dumps(solution_to_dict(oracle))), inst)
    assert back.gpus == oracle.gpus
    assert placement.evaluate(inst, back.assignment, gpus=back.gpus).objective == pytest.approx(oracle.objective)


@settings(max_examples=25, deadline=None)
@given(instances(max_servers=3, max_jobs=3, max_gpus=3, parameter_servers=False, gpu_factors=True))
def test_the_evaluator_agrees_with_monte_carlo(inst):
    sol = placement.solve(inst, "greedy")
    if not sol.status.has_placement:
        return
    mc = placement.monte_carlo(
        inst, sol.assignment, samples=4000, seed=3, shards=sol.shards, stages=sol.stages, gpus=sol.gpus
    )
    assert abs(mc.objective - sol.objective) <= 4 * mc.objective_ci + 1e-6 * max(1.0, sol.objective)


@settings(max_examples=20, deadline=None)
@given(instances(max_servers=3, max_jobs=3, max_gpus=3, parameter_servers=False, gpu_factors=True))
def test_exact_models_agree_with_brute_force_with_factors_and_classes(inst):
    oracle = placement.solve(inst, "brute_force", time_limit_s=60)
    check_solution(inst, oracle)
    for method in EXACT:
        sol = placement.solve(inst, method, time_limit_s=30)
        check_solution(inst, sol)
        if method == "cpsat" and oracle.status == Status.OPTIMAL and sol.status == Status.FEASIBLE:
            assert "above tolerance" in sol.stats.get("message", ""), sol.stats
        else:
            assert sol.status == oracle.status, (method, sol.stats)
        if oracle.objective is not None:
            assert sol.objective == pytest.approx(oracle.objective, rel=1e-4), (method, sol.stats)
            if sol.bound is not None:
                assert sol.bound <= oracle.objective * (1 + 1e-6) + 1e-9, method


def test_exports_say_which_gpus_were_chosen(tmp_path):
    """Slurm and the Kubernetes device plugin cannot ask for given GPU indices: the exports say
    which were chosen (a comment and PLACEMENT_GPUS in the script; an annotation on the pods)."""
    from placement.export import export

    inst = instance_from_dict(_doc())
    sol = placement.solve(inst, "brute_force")
    assert sol.gpus["a"]
    (sid, ids), *_ = sol.gpus["a"].items()
    want = f"{sid}:{','.join(map(str, ids))}"
    script = export(inst, sol, "slurm")["a.sbatch"]
    assert f'export PLACEMENT_GPUS="{want}"' in script and "Slurm picks a node's GPU indices itself" in script
    assert f"placement.io/gpus: {','.join(map(str, ids))}" in export(inst, sol, "volcano")["a.yaml"]
    bad = dataclasses.replace(sol, gpus={"a": {sid: (9,) * len(ids)}})
    with pytest.raises(placement.errors.InvalidInputError, match="GPUs"):
        export(inst, bad, "slurm")


def test_the_locality_penalty_slows_a_spread_job_as_a_whole():
    """Blox's and PAL's semantics: a job on two or more servers runs F times slower."""
    d = _doc(locality_penalty=1.7, jobs=[{"id": "a", "workers": 5, "compute_ms": 100, "gradient_mb": 0}])
    inst = instance_from_dict(d)
    assert instance_from_dict(instance_to_dict(inst)).locality_penalty == 1.7
    plain = inst.replace(locality_penalty=1.0)
    x = {"a": {"s0": 4, "s1": 1}}
    a, b = placement.evaluate(inst, x).jobs["a"], placement.evaluate(plain, x).jobs["a"]
    assert a.expected_iteration_ms == pytest.approx(1.7 * b.expected_iteration_ms)
    assert a.ideal_iteration_ms == pytest.approx(1.7 * b.ideal_iteration_ms)
    assert a.straggler_probability == pytest.approx(b.straggler_probability)
    with pytest.raises(InstanceError, match="locality_penalty"):
        instance_from_dict(_doc(locality_penalty=0.5))


@settings(max_examples=20, deadline=None)
@given(
    instances(max_servers=3, max_jobs=3, max_gpus=3, parameter_servers=False, gpu_factors=True, locality_penalty=True)
)
def test_exact_models_agree_with_brute_force_under_a_locality_penalty(inst):
    test_exact_models_agree_with_brute_force_with_factors_and_classes.hypothesis.inner_test(inst)

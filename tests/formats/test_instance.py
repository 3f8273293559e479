import copy
import json

import pytest
from hypothesis import given
from support.documents import BAD, BASE, job, mutate, n

import placement
from placement.errors import InstanceError, SolutionFormatError
from placement.formats import (
    instance_from_dict,
    instance_to_dict,
    load_instance,
    load_solution,
    parse_json,
    solution_from_dict,
    solution_to_dict,
)
from placement.problem import cluster_of
from placement.testing import instances


def problems_of(doc) -> list[str]:
    with pytest.raises(InstanceError) as e:
        instance_from_dict(doc)
    return list(e.value.problems)


def test_design_example_loads():
    inst = instance_from_dict(BASE)
    assert [s.id for s in inst.servers] == ["s0", "s1"]
    assert inst.jobs[1].slowdown["s1"].probs == (0.5, 0.5)


@pytest.mark.parametrize("name,fn,expect", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_field_and_path(name, fn, expect):
    problems = problems_of(mutate(fn))
    assert any(expect in p for p in problems), problems


def test_every_problem_at_once():
    def many(d):
        job(0)(d).update(workers=0, compute_ms=-3)
        n(1)(d).update(used_gpus=9)
        d["topology"]["edges"][0]["target"] = "nowhere"

    problems = problems_of(mutate(many))
    assert len(problems) == 4, problems


def test_nan_infinity_and_overflow_are_refused(tmp_path):
    text = (
        json.dumps(BASE)
        .replace('"compute_ms": 120', '"compute_ms": NaN')
        .replace('"compute_ms": 80', '"compute_ms": 1e999')
    )
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(InstanceError) as e:
        load_instance(p)
    msgs = e.value.problems
    assert "jobs[0].compute_ms must be a finite number, got NaN" in msgs
    assert "jobs[1].compute_ms must be a finite number, got 1e999" in msgs
    assert len(msgs) == 2, msgs


def test_malformed_json_and_duplicate_keys(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"format": "placement-instance/1", "name": ')
    with pytest.raises(InstanceError, match="malformed JSON instance: .* line 1 column"):
        load_instance(p)
    data, problems = parse_json('{"a": 1, "a": 2}')
    assert problems == ["duplicate key 'a' in a JSON object"]


def test_not_an_object_and_solution_given_as_instance():
    assert problems_of([1, 2]) == ["(document) must be a JSON object, got a list of 2"]
    probs = problems_of({"format": "placement-solution/1"})
    assert any("this is a solution document" in p for p in probs)


def test_links_key_of_older_networkx_is_read():
    d = copy.deepcopy(BASE)
    d["topology"]["links"] = d["topology"].pop("edges")
    assert instance_from_dict(d) == instance_from_dict(BASE)
    d["topology"]["edges"] = d["topology"]["links"]
    assert any("not both" in p for p in problems_of(d))


def test_networkx_node_link_output_is_accepted():
    import networkx as nx

    inst = placement.load_bundled("demo")
    g = cluster_of(inst).graph
    data = nx.node_link_data(g, edges="edges")
    for node in data["nodes"]:
        if node["kind"] == "server":
            sd = node.pop("slowdown")
            node["slowdown"] = {"values": list(sd.values), "probs": list(sd.probs)}
            for k in ("cpus", "memory_gb"):
                if node[k] is None:
                    node.pop(k)
    doc = {"format": "placement-instance/1", "name": "nx", "topology": data, "jobs": instance_to_dict(inst)["jobs"]}
    again = instance_from_dict(doc)
    assert again.servers == inst.servers and again.jobs == inst.jobs


def test_unreachable_servers_are_allowed():
    d = copy.deepcopy(BASE)
    d["topology"]["edges"].pop()
    inst = instance_from_dict(d)
    assert cluster_of(inst).bottleneck(["s0", "s1"]) == 0.0


@pytest.mark.parametrize("name", placement.bundled_names())
def test_bundled_round_trip(name, tmp_path):
    inst = placement.load_bundled(name)
    assert instance_from_dict(instance_to_dict(inst)) == inst
    placement.dump_instance(inst, tmp_path / "x.json")
    assert load_instance(tmp_path / "x.json") == inst
    assert inst.source


@given(instances())
def test_generated_round_trip(inst):
    d = instance_to_dict(inst)
    assert instance_from_dict(json.loads(json.dumps(d))) == inst
    assert instance_to_dict(instance_from_dict(d)) == d


def test_solution_round_trip_and_checks(tmp_path):
    inst = placement.load_bundled("demo")
    sol = placement.solve(inst, "greedy")
    p = tmp_path / "s.json"
    placement.dump_solution(sol, p)
    back = load_solution(p, inst)
    assert solution_to_dict(back) == solution_to_dict(sol)
    d = solution_to_dict(sol)
    d["assignment"]["nope"] = {"s99": 1}
    with pytest.raises(SolutionFormatError) as e:
        solution_from_dict(d, inst)
    assert "assignment.nope names unknown job 'nope'" in e.value.problems
    assert "assignment.nope.s99 names unknown server 's99'" in e.value.problems
    d = solution_to_dict(sol)
    d["status"] = "great"
    with pytest.raises(SolutionFormatError, match="status must be one of"):
        solution_from_dict(d, inst)


def test_schemas_are_valid_json_schema():
    import jsonschema

    for name in ("instance", "solution"):
        jsonschema.Draft202012Validator.check_schema(placement.formats.schema(name))

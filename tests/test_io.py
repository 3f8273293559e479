import copy
import json

import pytest
from hypothesis import given

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

BASE = {
    "format": "placement-instance/1",
    "name": "demo",
    "topology": {
        "nodes": [
            {
                "id": "s0",
                "kind": "server",
                "gpus": 8,
                "gpu_type": "A100",
                "intra_bandwidth_gbps": 2400,
                "slowdown": {"values": [1.0, 2.0], "probs": [0.95, 0.05]},
            },
            {"id": "s1", "kind": "server", "gpus": 4, "gpu_type": "V100", "intra_bandwidth_gbps": 600},
            {"id": "tor0", "kind": "switch"},
        ],
        "edges": [
            {"source": "s0", "target": "tor0", "bandwidth_gbps": 100},
            {"source": "s1", "target": "tor0", "bandwidth_gbps": 100},
        ],
    },
    "jobs": [
        {"id": "j0", "workers": 4, "compute_ms": 120, "gradient_mb": 100},
        {
            "id": "j1",
            "workers": 2,
            "compute_ms": 80,
            "gradient_mb": 10,
            "iterations": 100,
            "slowdown": {"s1": {"values": [1.0, 1.5], "probs": [0.5, 0.5]}},
        },
    ],
}


def mutate(fn):
    d = copy.deepcopy(BASE)
    fn(d)
    return d


def problems_of(doc) -> list[str]:
    with pytest.raises(InstanceError) as e:
        instance_from_dict(doc)
    return list(e.value.problems)


def test_design_example_loads():
    inst = instance_from_dict(BASE)
    assert [s.id for s in inst.servers] == ["s0", "s1"]
    assert inst.jobs[1].slowdown["s1"].probs == (0.5, 0.5)


def n(i):
    return lambda d: d["topology"]["nodes"][i]


def job(i):
    return lambda d: d["jobs"][i]


BAD = [
    ("workers zero", lambda d: job(0)(d).update(workers=0), "jobs[0].workers must be an integer >= 1, got 0"),
    ("fractional workers", lambda d: job(0)(d).update(workers=2.5), "jobs[0].workers must be an integer, got 2.5"),
    ("float-valued int", lambda d: job(0)(d).update(workers=2.0), "jobs[0].workers must be an integer, got 2.0"),
    ("absurd workers", lambda d: job(0)(d).update(workers=10**9), "jobs[0].workers must be an integer <= 100000"),
    ("bool as number", lambda d: job(0)(d).update(compute_ms=True), "jobs[0].compute_ms must be a number, got true"),
    ("bool as int", lambda d: n(0)(d).update(gpus=True), "topology.nodes[0].gpus must be an integer, got true"),
    ("negative time", lambda d: job(0)(d).update(compute_ms=-1), "jobs[0].compute_ms must be a number > 0, got -1"),
    (
        "zero bandwidth",
        lambda d: d["topology"]["edges"][0].update(bandwidth_gbps=0),
        "topology.edges[0].bandwidth_gbps must be a number > 0",
    ),
    (
        "zero intra",
        lambda d: n(1)(d).update(intra_bandwidth_gbps=0),
        "topology.nodes[1].intra_bandwidth_gbps must be a number > 0",
    ),
    ("used > gpus", lambda d: n(1)(d).update(used_gpus=5), "topology.nodes[1].used_gpus must be <= gpus (4), got 5"),
    (
        "probs sum",
        lambda d: n(0)(d)["slowdown"].update(probs=[0.5, 0.4]),
        "topology.nodes[0].slowdown.probs must sum to 1",
    ),
    (
        "slowdown < 1",
        lambda d: n(0)(d)["slowdown"].update(values=[0.9, 2.0]),
        "topology.nodes[0].slowdown.values[0] must be a number >= 1, got 0.9",
    ),
    (
        "length mismatch",
        lambda d: n(0)(d)["slowdown"].update(values=[1.0, 2.0, 3.0]),
        "topology.nodes[0].slowdown.values and topology.nodes[0].slowdown.probs must have the same length, got 3 and 2",
    ),
    ("duplicate server id", lambda d: n(1)(d).update(id="s0"), "topology.nodes[1].id duplicates node id 's0'"),
    ("duplicate job id", lambda d: job(1)(d).update(id="j0"), "jobs[1].id duplicates job id 'j0'"),
    (
        "edge to unknown",
        lambda d: d["topology"]["edges"][1].update(target="tor9"),
        "topology.edges[1].target names unknown node 'tor9'",
    ),
    (
        "unknown kind",
        lambda d: n(2)(d).update(kind="router"),
        "topology.nodes[2].kind must be one of 'server', 'switch', got 'router'",
    ),
    ("unknown objective", lambda d: d.update(objective="makespan"), "objective must be one of"),
    ("unknown admission", lambda d: d.update(admission="some"), "admission must be one of"),
    (
        "wrong format",
        lambda d: d.update(format="placement-instance/2"),
        "format must be 'placement-instance/1', got 'placement-instance/2'",
    ),
    ("missing jobs", lambda d: d.pop("jobs"), "jobs is required"),
    ("missing topology", lambda d: d.pop("topology"), "topology is required"),
    ("missing field", lambda d: job(0)(d).pop("compute_ms"), "jobs[0].compute_ms is required"),
    ("wrong type", lambda d: d.update(jobs={"j0": 1}), "jobs must be a list, got an object"),
    ("unknown field", lambda d: job(0)(d).update(wokers=3), "jobs[0]: unknown field 'wokers'"),
    (
        "allowed unknown",
        lambda d: job(0)(d).update(allowed_servers=["s0", "s9"]),
        "jobs[0].allowed_servers[1] names unknown server 's9'",
    ),
    (
        "override unknown",
        lambda d: job(1)(d)["slowdown"].update(s7={"values": [1], "probs": [1]}),
        "jobs[1].slowdown.s7 names unknown server 's7'",
    ),
    (
        "scenario unknown server",
        lambda d: (n(0)(d).pop("slowdown"), d.update(scenarios={"probs": [0.5, 0.5], "slowdowns": {"s5": [1, 2]}})),
        "scenarios.slowdowns.s5 names an unknown server",
    ),
    (
        "scenario length",
        lambda d: (
            n(0)(d).pop("slowdown"),
            job(1)(d).pop("slowdown"),
            d.update(scenarios={"probs": [0.5, 0.5], "slowdowns": {"s0": [1, 2, 3]}}),
        ),
        "scenarios.slowdowns.s0 must have 2 values (one per scenario), got 3",
    ),
    (
        "scenario probs",
        lambda d: (
            n(0)(d).pop("slowdown"),
            job(1)(d).pop("slowdown"),
            d.update(scenarios={"probs": [0.5, 0.6], "slowdowns": {}}),
        ),
        "scenarios.probs must sum to 1, got 1.1",
    ),
    (
        "jct needs iterations",
        lambda d: d.update(objective="weighted_expected_jct"),
        "jobs[0].iterations is required by the objective 'weighted_expected_jct'",
    ),
    (
        "self loop",
        lambda d: d["topology"]["edges"].append({"source": "s0", "target": "s0", "bandwidth_gbps": 1}),
        "is a self-loop on 's0'",
    ),
    (
        "duplicate edge",
        lambda d: d["topology"]["edges"].append({"source": "tor0", "target": "s0", "bandwidth_gbps": 1}),
        "topology.edges[2] duplicates topology.edges[0]",
    ),
    (
        "negative gradient",
        lambda d: job(0)(d).update(gradient_mb=-5),
        "jobs[0].gradient_mb must be a number >= 0, got -5",
    ),
    (
        "zero max_servers",
        lambda d: job(0)(d).update(max_servers=0),
        "jobs[0].max_servers must be an integer >= 1, got 0",
    ),
    (
        "bad gpu_speed",
        lambda d: job(0)(d).update(gpu_speed={"A100": 0}),
        "jobs[0].gpu_speed.A100 must be a number > 0, got 0",
    ),
]


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

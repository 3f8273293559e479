"""A small valid ``placement-instance/1`` document, and the ways to break it that the loader
must refuse (with the message it must give), shared by the format and CLI tests."""

from __future__ import annotations

import copy

__all__ = ["BASE", "BAD", "mutate", "n", "job"]

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

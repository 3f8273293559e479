import copy

import pytest
from hypothesis import given
from support.documents import BASE

from placement.evaluation import validate
from placement.formats import instance_from_dict
from placement.testing import instances


def inst_with(**job_changes):
    d = copy.deepcopy(BASE)
    d["jobs"][0].update(job_changes)
    d["topology"]["nodes"][0].update(cpus=16, memory_gb=64)
    return instance_from_dict(d)


def kinds(inst, asg, unplaced=None):
    return sorted({v.kind for v in validate(inst, asg, unplaced)})


def test_a_valid_placement_has_no_violation():
    inst = inst_with()
    assert validate(inst, {"j0": {"s0": 4}, "j1": {"s1": 2}}) == []


@pytest.mark.parametrize(
    "changes,asg,kind",
    [
        ({}, {"j0": {"s0": 3}, "j1": {"s1": 2}}, "gang"),
        ({}, {"j0": {"s1": 4}, "j1": {"s1": 2}}, "gpus"),
        ({"cpus_per_worker": 5}, {"j0": {"s0": 4}, "j1": {"s1": 2}}, "cpus"),
        ({"memory_gb_per_worker": 20}, {"j0": {"s0": 4}, "j1": {"s1": 2}}, "memory"),
        ({"gpu_speed": {"A100": 1.0}}, {"j0": {"s0": 2, "s1": 2}, "j1": {"s0": 2}}, "gpu_type"),
        ({"allowed_servers": ["s1"]}, {"j0": {"s0": 4}, "j1": {"s1": 2}}, "allowed_servers"),
        ({"max_servers": 1}, {"j0": {"s0": 2, "s1": 2}, "j1": {"s0": 2}}, "max_servers"),
        ({"iterations": 1000, "deadline_s": 0.01}, {"j0": {"s0": 4}, "j1": {"s1": 2}}, "deadline"),
        ({}, {"j1": {"s1": 2}}, "admission"),
        ({}, {"j0": {"s0": 4}, "j1": {"s1": 2}, "zz": {"s0": 1}}, "unknown_job"),
        ({}, {"j0": {"s0": 4, "s9": 0}, "j1": {"s1": 2}}, "unknown_server"),
        ({}, {"j0": {"s0": -1}, "j1": {"s1": 2}}, "bad_count"),
    ],
)
def test_planted_violation_is_caught(changes, asg, kind):
    assert kind in kinds(inst_with(**changes), asg)


def test_unreachable_and_unplaced_list():
    d = copy.deepcopy(BASE)
    d["topology"]["edges"].pop()
    d["admission"] = "best_effort"
    inst = instance_from_dict(d)
    assert "unreachable" in kinds(inst, {"j0": {"s0": 2, "s1": 2}})
    assert kinds(inst, {"j1": {"s1": 2}}, unplaced=["j0"]) == []
    assert "unplaced" in kinds(inst, {"j1": {"s1": 2}}, unplaced=[])
    assert "unplaced" in kinds(inst, {"j1": {"s1": 2}}, unplaced=["j0", "j1"])


def test_all_violations_are_reported_together():
    inst = inst_with(max_servers=1, allowed_servers=["s1"])
    vs = validate(inst, {"j0": {"s0": 3, "s1": 5}})
    assert {"gang", "max_servers", "allowed_servers", "gpus", "admission"} <= {v.kind for v in vs}


@given(instances())
def test_witness_is_valid_and_capacity_is_enforced(inst):
    w = inst.metadata["witness"]
    if len(w) == len(inst.jobs):
        assert [v for v in validate(inst, w, shards=inst.metadata["witness_shards"]) if v.kind != "deadline"] == []
    # add one GPU too many on a full server: caught
    full = [s for s in inst.servers if s.free_gpus > 0]
    if full and inst.jobs:
        s = full[0]
        j = inst.jobs[0]
        bad = {j.id: {s.id: s.free_gpus + 1}}
        assert "gpus" in kinds(inst, bad)

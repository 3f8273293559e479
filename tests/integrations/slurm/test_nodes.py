"""Slurm's nodes JSON (scontrol show nodes --json, sinfo --json) and GRES strings."""

from __future__ import annotations

import json

import pytest
from support.helpers import problems_of
from support.slurm_data import CPU_NODE, NODE_2205, NODE_NEW

from placement.errors import InvalidInputError
from placement.integrations.slurm import (
    SlurmNode,
    parse_gres,
    read_slurm_nodes,
)


def test_nodes_json_of_each_slurm_version_is_read():
    nodes = read_slurm_nodes(json.dumps({"meta": {}, "errors": [], "nodes": [NODE_2205, NODE_NEW, CPU_NODE]}))
    assert nodes["g1"] == SlurmNode("g1", 8, "a100", 2, 96, 1024.0, ("MIXED", "DRAIN"))
    assert nodes["g2"] == SlurmNode("g2", 8, "h100", 3, 64, 512.0, ("IDLE",))
    assert not nodes["g1"].available and nodes["g2"].available
    assert "c1" not in nodes and nodes.without_gpus == ("c1",)


def _sinfo_row(node: str, partition: str, gres: str = "gpu:l40s:4(S:0-1)", used: str = "gpu:l40s:1(IDX:0)") -> dict:
    return {
        "partition": {"name": partition},
        "node": {"state": ["MIXED"]},
        "nodes": {"allocated": 1, "idle": 0, "other": 0, "total": 1, "hostnames": [], "nodes": [node]},
        "cpus": {"allocated": 2, "idle": 254, "other": 0, "total": 256, "minimum": 256, "maximum": 256},
        "memory": {"minimum": 1547680, "maximum": 1547680, "free": {"minimum": {"set": True, "number": 9}}},
        "gres": {"total": f"tmpsize:7T,{gres}", "used": f"{used},tmpsize:10737418240"},
    }


def test_sinfo_rows_are_read_one_node_each():
    doc = {"sinfo": [_sinfo_row("l1", "gpu"), _sinfo_row("l1", "all"), _sinfo_row("l2", "gpu", "gpu:2", "gpu:0")]}
    nodes = read_slurm_nodes(json.dumps(doc))
    assert nodes["l1"] == SlurmNode("l1", 4, "l40s", 1, 256, 1547680 / 1024, ("MIXED",))
    assert nodes["l2"].gpu_type == "unknown" and nodes["l2"].gpus == 2
    grouped = _sinfo_row("l1", "gpu")
    grouped["nodes"]["nodes"] = ["l1", "l2"]
    with pytest.raises(InvalidInputError, match=r"sinfo\[0\].nodes.nodes: one row for 2 nodes \(l1,l2\).*sinfo -N"):
        read_slurm_nodes(json.dumps({"sinfo": [grouped]}))
    differ = {"sinfo": [_sinfo_row("l1", "gpu"), _sinfo_row("l1", "all", used="gpu:l40s:2(IDX:0-1)")]}
    with pytest.raises(InvalidInputError, match=r"sinfo\[1\]: node 'l1' differs from sinfo\[0\]"):
        read_slurm_nodes(json.dumps(differ))


@pytest.mark.parametrize(
    "gres, expected",
    [
        ("gpu:a100:8(S:0-1)", {"a100": 8}),
        ("gpu:8", {"": 8}),
        ("gpu", {"": 1}),
        ("gpu:tesla", {"tesla": 1}),
        ("gpu:a100:4,gpu:v100:2,nic:1", {"a100": 4, "v100": 2}),
        ("gpu:(null):0(IDX:N/A)", {"": 0}),
        ("gpu:a100:3(IDX:0,2-3)", {"a100": 3}),
        ("gpu:3g.20gb:2", {"3g.20gb": 2}),
        ("gpu:a100:no_consume:2", {"a100": 2}),
        ("(null)", {}),
        ("", {}),
    ],
)
def test_gres_strings(gres, expected):
    assert parse_gres(gres) == (expected, [])


def test_malformed_gres_and_counts_are_refused_with_their_paths():
    doc = {
        "nodes": [
            {"name": "a", "gres": "gpu:a100:eight", "cpus": 8},
            {"name": "b", "gres": "gpu:a100:2", "gres_used": "gpu:a100:3(IDX:0-2)", "cpus": -4},
            {"name": "c", "gres": "gpu:a100:2(S:0", "real_memory": "lots"},
            {"name": "d", "gres": "gpu:a:b:2"},
            {"gres": "gpu:1"},
        ],
        "errors": [{"description": "Unable to contact slurm controller"}],
    }
    with pytest.raises(InvalidInputError) as e:
        read_slurm_nodes(json.dumps(doc))
    msgs = problems_of(e)
    for w in (
        "nodes[0].gres: malformed GPU entry 'gpu:a100:eight'",
        "nodes[1].gres_used: 3 GPUs in use, but the node has 2",
        "nodes[1].cpus: expected an integer >= 0, got -4",
        "nodes[2].gres: unbalanced parentheses",
        "nodes[2].real_memory: expected an integer >= 0, got 'lots'",
        "nodes[3].gres: malformed GPU entry 'gpu:a:b:2'",
        "nodes[4].name: expected the node name",
        "errors[0]: Slurm reported 'Unable to contact slurm controller'",
    ):
        assert w in msgs
    for bad, words in (("{", "malformed JSON"), ("[1]", "a 'nodes' list"), ('{"jobs": []}', "'sinfo' list")):
        with pytest.raises(InvalidInputError, match=words):
            read_slurm_nodes(bad)

"""An instance on a Slurm cluster: the nodes' GPUs on the topology's switches."""

from __future__ import annotations

import json

import pytest
from support.helpers import problems_of
from support.slurm_data import CONF, CPU_NODE, TREE_YAML, slurm_node

import placement
from placement.errors import InvalidInputError
from placement.integrations.slurm import (
    instance_from_slurm,
    read_slurm_nodes,
)
from placement.problem import cluster_of


def test_an_instance_on_the_slurm_nodes_has_their_gpus():
    doc = {
        "nodes": [
            slurm_node("g1", 8, 2),
            slurm_node("g2", 8, state="DOWN"),
            slurm_node("g3", 4),
            slurm_node("g4", 4, 4),
            CPU_NODE | {"name": "cpu1"},
        ]
    }
    nodes = read_slurm_nodes(json.dumps(doc))
    inst = instance_from_slurm(CONF, [200, 50], nodes=nodes, jobs=3, seed=5, regime="hot")
    assert [s.id for s in inst.servers] == ["g1", "g2", "g3", "g4"]
    by = inst.server_by_id
    assert (by["g1"].gpus, by["g1"].used_gpus, by["g1"].gpu_type) == (8, 2, "h100")
    assert by["g2"].used_gpus == 8  # DOWN: nothing placed there
    assert by["g1"].cpus == 64 and by["g1"].memory_gb == 256 and by["g1"].intra_bandwidth_gbps == 3600
    assert "cpu1" not in by and "1 unavailable node(s), all GPUs counted used: g2" in inst.source
    assert cluster_of(inst).bottleneck(["g1", "g3"]) == 50
    assert sum(j.workers for j in inst.jobs) <= sum(s.free_gpus for s in inst.servers)
    assert placement.solve(inst, "greedy").status.has_placement
    assert placement.instance_from_dict(placement.instance_to_dict(inst)) == inst


def test_nodes_on_one_side_only_are_listed_by_name():
    doc = {"nodes": [slurm_node("g1", 8), slurm_node("g2", 8), slurm_node("g9", 8), slurm_node("g10", 2)]}
    with pytest.raises(InvalidInputError) as e:
        instance_from_slurm(CONF, [200, 50], nodes=read_slurm_nodes(json.dumps(doc)), jobs=2)
    msgs = problems_of(e)
    assert "topology.conf lists node(s) the nodes JSON does not: g3,g4,cpu1" in msgs
    assert "the nodes JSON lists GPU node(s) on no switch of topology.conf: g9,g10" in msgs


def test_a_flat_topology_puts_every_node_on_one_switch():
    nodes = read_slurm_nodes(json.dumps({"nodes": [slurm_node("g1", 8), slurm_node("g2", 4)]}))
    inst = instance_from_slurm(TREE_YAML, [100], nodes=nodes, topology_format="yaml", topology_name="plain", jobs=2)
    assert [w.id for w in inst.switches] == ["flat"] and cluster_of(inst).bottleneck(["g1", "g2"]) == 100


# ----------------------------------------------------------------------------- export


def test_the_topology_format_is_the_one_given_or_the_file_s_extension():
    from placement.integrations.slurm import TOPOLOGY_FORMATS, topology_format_of

    assert TOPOLOGY_FORMATS == ("conf", "yaml")
    assert topology_format_of("a/topology.yaml") == topology_format_of("t.YML") == "yaml"
    assert topology_format_of("topology.conf") == topology_format_of("topo") == "conf"
    assert topology_format_of("topology.yaml", "conf") == "conf"
    with pytest.raises(InvalidInputError, match="--format must be auto or one of conf, yaml"):
        topology_format_of("t.conf", "xml")

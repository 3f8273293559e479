"""Slurm's topology.conf and topology.yaml (tree and block plugins): read, and refused with their lines and paths."""

from __future__ import annotations

import pytest
from support.helpers import problems_of
from support.slurm_data import TREE_YAML

import placement
from placement.errors import InvalidInputError
from placement.integrations.slurm import (
    instance_from_slurm,
    parse_topology_conf,
    parse_topology_yaml,
)
from placement.problem import cluster_of


def test_topology_yaml_tree_is_read_like_topology_conf():
    nodes, kids = parse_topology_yaml(TREE_YAML)
    assert nodes == {"leaf0": [f"gpu{k:02d}" for k in range(4)], "leaf1": [f"gpu{k:02d}" for k in range(4, 8)]}
    assert kids == {"spine": ["leaf0", "leaf1"]}
    conf = "SwitchName=leaf0 Nodes=gpu[00-03]\nSwitchName=leaf1 Nodes=gpu[04-07]\nSwitchName=spine Switches=leaf[0-1]\n"
    assert parse_topology_conf(conf) == (nodes, kids)
    inst = instance_from_slurm(TREE_YAML, [200, 50], topology_format="yaml", jobs=3, seed=2)
    cl = cluster_of(inst)
    assert cl.bottleneck(["gpu00", "gpu03"]) == 200 and cl.bottleneck(["gpu00", "gpu04"]) == 50
    assert placement.instance_from_dict(placement.instance_to_dict(inst)) == inst


def test_topology_yaml_picks_the_named_or_the_cluster_default_topology():
    assert parse_topology_yaml(TREE_YAML, "one") == ({"all": [f"gpu{k:02d}" for k in range(8)]}, {})
    assert parse_topology_yaml(TREE_YAML, "plain") == ({}, {})
    no_default = TREE_YAML.replace("cluster_default: true", "cluster_default: false")
    assert parse_topology_yaml(no_default)[1] == {"spine": ["leaf0", "leaf1"]}  # the first listed
    with pytest.raises(InvalidInputError, match="no topology 'nope'"):
        parse_topology_yaml(TREE_YAML, "nope")


def _blocks(n: int, per: int = 4, sizes: str = "") -> str:
    lines = ["- topology: blocks", "  block:"]
    if sizes:
        lines.append(f"    block_sizes: [{sizes}]")
    lines.append("    blocks:")
    lines += [f"      - {{block: b{i}, nodes: 'n[{per * i}-{per * i + per - 1}]'}}" for i in range(n)]
    return "\n".join(lines) + "\n"


def test_block_topology_aggregates_blocks_as_slurm_does():
    nodes, kids = parse_topology_yaml(_blocks(5))
    assert list(nodes) == [f"b{i}" for i in range(5)] and nodes["b4"] == ["n16", "n17", "n18", "n19"]
    # default levels 1, 2, 4, 8 base blocks, up to the first holding all five
    assert kids == {
        "b[0-1]": ["b0", "b1"],
        "b[2-3]": ["b2", "b3"],
        "b[0-3]": ["b[0-1]", "b[2-3]"],
        "b[0-4]": ["b[0-3]", "b4"],
    }
    # block_sizes 4,16 nodes: base 4, one level of 4 blocks; the fifth block's run is too short
    assert parse_topology_yaml(_blocks(5, sizes="4, 16"))[1] == {"b[0-3]": ["b0", "b1", "b2", "b3"]}
    inst = instance_from_slurm(_blocks(4, sizes="4,8,16"), [100, 50, 25], topology_format="yaml", jobs=3, seed=1)
    cl = cluster_of(inst)
    assert (
        cl.bottleneck(["n0", "n3"]) == 100 and cl.bottleneck(["n0", "n4"]) == 50 and cl.bottleneck(["n0", "n8"]) == 25
    )


@pytest.mark.parametrize(
    "text, words",
    [
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: 'n[1-'}\n",
            ["topology.yaml[0].tree.switches[0].nodes: unbalanced '['"],
        ),
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: 'n[x]'}\n",
            ["switches[0].nodes: bad item 'x'"],
        ),
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: n1}\n      - {switch: s, children: zz}\n",
            ["topology.yaml[0].tree.switches[1].children: switch 's' lists unknown switch 'zz'"],
        ),
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: n1, speed: 5}\n",
            ["topology.yaml[0].tree.switches[0]: unknown key 'speed'"],
        ),
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: n1, children: b}\n      - {switch: b, nodes: n2}\n",
            ["both child switches and nodes"],
        ),
        (
            "- topology: t\n  tree:\n    switches:\n      - {switch: a, nodes: 'n[1-2]'}\n      - {switch: b, nodes: n2}\n",
            ["topology.yaml[0].tree.switches[1].nodes: node 'n2' is on both 'a' and 'b'"],
        ),
        ("- topology: t\n  tree:\n    switches:\n      - {switch: a, children: a}\n", ["switch cycle through 'a'"]),
        ("- topology: t\n  tree:\n    switches: [\n", ["topology.yaml line 4: not YAML"]),
        ("- topology: t\n  topology: u\n  flat: true\n", ["topology.yaml line 2: not YAML (duplicate key 'topology')"]),
        ("- &x {topology: t, flat: true}\n- *x\n", ["aliases"]),
        ("topology: t\n", ["expected a list of topologies"]),
        ("- topology: t\n  ring: {rings: []}\n", ["topology.yaml[0].ring: the ring topology is not a tree"]),
        ("- topology: t\n  flat: true\n  tree: {}\n", ["topology.yaml[0]: expected exactly one of tree, block, flat"]),
        ("- topology: t\n  wings: 2\n  flat: true\n", ["topology.yaml[0]: unknown key 'wings'"]),
        (
            "- topology: t\n  block:\n    block_sizes: [4, 12]\n    blocks:\n      - {block: b0, nodes: 'n[0-2]'}\n",
            [
                "topology.yaml[0].block.block_sizes[1]: 12 is not the base size 4 times a power of two",
                "topology.yaml[0].block.blocks[0].nodes: block 'b0' has 3 nodes, fewer than the base size 4",
            ],
        ),
        (
            "- topology: t\n  block:\n    blocks:\n      - {block: b0}\n",
            ["topology.yaml[0].block.blocks[0]: block 'b0' has no nodes"],
        ),
    ],
)
def test_bad_topology_yaml_is_refused_with_its_path(text, words):
    with pytest.raises(InvalidInputError) as e:
        parse_topology_yaml(text)
    msgs = problems_of(e)
    for w in words:
        assert w in msgs


def test_topology_conf_refuses_what_slurm_refuses_with_line_numbers():
    with pytest.raises(InvalidInputError) as e:
        parse_topology_conf("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2 Switches=a\nSwitchName=c Nodes=m[0-\n")
    msgs = problems_of(e)
    assert "line 2: switch 'b' has both child switches and nodes" in msgs
    assert "line 2: node 'n2' is on both 'a' and 'b'" in msgs
    assert "line 3: unbalanced '['" in msgs

"""The one rule that turns a switch tree and per-level bandwidths into links, for every
importer: a link has the bandwidth of the level of the switch it goes up into."""

from __future__ import annotations

import pytest

from placement.errors import InvalidInputError
from placement.integrations.levels import describe_levels, level_links, level_problems, levels_needed
from placement.integrations.slurm import instance_from_slurm
from placement.problem import cluster_of

# a leaf wired straight to the level-2 core, beside a two-level branch
UPLINK = {"n0": "leafA", "n1": "leafB", "n2": "leafC"}
PARENT = {"leafA": "spine", "leafB": "spine", "spine": "core", "leafC": "core", "core": None}
LEVEL = {"leafA": 0, "leafB": 0, "leafC": 0, "spine": 1, "core": 2}
ORDER = ["leafA", "leafB", "leafC", "spine", "core"]


def bandwidth(links, a, b):
    return next(x.bandwidth_gbps for x in links if {x.source, x.target} == {a, b})


def test_a_link_gets_the_bandwidth_of_the_switch_it_goes_up_into():
    switches, links = level_links(UPLINK, PARENT, LEVEL, ORDER, [400, 200, 100])
    assert [s.id for s in switches] == ORDER
    assert bandwidth(links, "n2", "leafC") == 400
    assert bandwidth(links, "leafA", "spine") == 200
    assert bandwidth(links, "spine", "core") == 100
    assert bandwidth(links, "leafC", "core") == 100  # up into level 2, not "one above the leaf"


def test_several_tops_are_joined_by_a_root_one_level_up_or_left_apart():
    parent = {"a": None, "b": None}
    level = {"a": 0, "b": 0}
    assert levels_needed(level, parent, ["a", "b"]) == 2
    assert levels_needed(level, parent, ["a", "b"], joined=False) == 1
    switches, links = level_links({"x": "a", "y": "b"}, parent, level, ["a", "b"], [100, 25], root="root")
    assert [s.id for s in switches] == ["a", "b", "root"] and bandwidth(links, "a", "root") == 25
    switches, links = level_links({"x": "a", "y": "b"}, parent, level, ["a", "b"], [100])
    assert [s.id for s in switches] == ["a", "b"] and len(links) == 2


def test_bandwidths_must_be_positive_and_enough_extra_ones_are_said_ignored():
    assert level_problems([100, 50], 2, "t", "2 levels") == []
    assert level_problems([100], 2, "t", "2 levels") == [
        "level_gbps: the topology (t) has 2 levels, so 2 bandwidth(s); got 1"
    ]
    assert level_problems([100, float("nan")], 2, "t", "x")[0].startswith("level_gbps must all be finite numbers > 0")
    assert level_problems([100, True], 2, "t", "x")[0].startswith("level_gbps must all be finite numbers > 0")
    assert describe_levels([100, 50], 2) == "100,50 Gbit/s"
    assert describe_levels([100, 50, 25], 2) == "100,50 Gbit/s (1 more given than the tree's 2 levels: ignored)"


def test_slurm_follows_the_rule_on_an_unbalanced_tree():
    conf = (
        "SwitchName=a Nodes=g[1-2]\nSwitchName=b Nodes=g[3-4]\nSwitchName=s Switches=a\nSwitchName=top Switches=s,b\n"
    )
    inst = instance_from_slurm(conf, [400, 200, 100, 50], jobs=2, seed=0)
    links = inst.links
    assert bandwidth(links, "g1", "a") == 400 and bandwidth(links, "a", "s") == 200
    assert bandwidth(links, "b", "top") == 100  # the leaf b goes up into the level-2 switch
    assert "1 more given than the tree's 3 levels: ignored" in inst.source
    assert cluster_of(inst).bottleneck(["g1", "g3"]) == 100
    with pytest.raises(InvalidInputError, match="has 3 link levels, so 3 bandwidth"):
        instance_from_slurm(conf, [400, 200], jobs=2, seed=0)

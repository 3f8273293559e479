"""Slurm, out and in: host lists, topology.conf / topology.yaml, the nodes' JSON, the batch
scripts of a placement, and a real slurmctld that takes them."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slurmctld import missing_binaries, running_slurmctld

import placement
from placement.errors import InvalidInputError
from placement.export.names import file_stem
from placement.export.ranks import rank_order
from placement.export.slurm import gres_type, sbatch_files, slurm_conf, switch_tree, topology_conf
from placement.instances.generate import generate
from placement.instances.slurm import (
    SlurmNode,
    compress_hostlist,
    expand_hostlist,
    instance_from_slurm,
    parse_gres,
    parse_topology_conf,
    parse_topology_yaml,
    read_slurm_nodes,
)
from placement.model import Instance, Job, Link, Server, Solution, Status, Switch
from placement.problem import cluster_of


def problems_of(excinfo: pytest.ExceptionInfo[InvalidInputError]) -> str:
    return "\n".join(excinfo.value.problems)


# ----------------------------------------------------------------------------- host lists


def test_compress_hostlist_writes_slurm_brackets():
    assert compress_hostlist(["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02"]) == "tux[0-3,7],gpu[01-02]"
    assert compress_hostlist(["n08", "n09", "n10", "n11"]) == "n[08-11]"
    assert compress_hostlist(["gpu8", "gpu09"]) == "gpu[8,09]"
    assert compress_hostlist(["n8", "n09"]) == "n8,n09"  # shorter without the bracket
    assert compress_hostlist(["login", "a1", "b1", "a2"]) == "login,a1,b1,a2"
    assert compress_hostlist(["x007", "x008", "x010"]) == "x[007-008,010]"
    assert compress_hostlist([]) == ""


@pytest.mark.parametrize("bad", [["a,b"], ["a[1]"], ["a b"], [""], ["ok", "x]"]])
def test_compress_hostlist_refuses_names_a_host_list_cannot_hold(bad):
    with pytest.raises(ValueError, match="host names"):
        compress_hostlist(bad)


_names = st.one_of(
    st.builds(
        lambda p, n, w: f"{p}{str(n).zfill(w)}",
        st.sampled_from(["tux", "gpu", "n", "rack1-node", "a.b_", ""]),
        st.integers(0, 1200),
        st.integers(0, 4),
    ),
    st.text("abz019-_.", min_size=1, max_size=6),
)


@given(st.lists(_names, max_size=30))
def test_compress_then_expand_gives_the_hosts_back(hosts):
    text = compress_hostlist(hosts)
    assert expand_hostlist(text) == hosts
    assert len(text) <= len(",".join(hosts))


@given(st.lists(st.integers(0, 60), min_size=1, max_size=40).map(lambda ks: [f"gpu{k:03d}" for k in sorted(set(ks))]))
def test_sorted_padded_hosts_make_one_bracket(hosts):
    text = compress_hostlist(hosts)
    assert text.count("[") <= 1 and expand_hostlist(text) == hosts


# ----------------------------------------------------------------------------- topology


TREE_YAML = """
- topology: fabric
  cluster_default: true
  tree:
    switches:
      - switch: leaf0
        nodes: gpu[00-03]
      - switch: leaf1
        nodes: gpu[04-07]
      - switch: spine
        children: leaf[0-1]
- topology: one
  tree:
    switches:
      - {switch: all, nodes: "gpu[00-07]"}
- topology: plain
  flat: true
"""


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


# ----------------------------------------------------------------------------- nodes JSON


# A node of `sinfo --json` from Slurm 22.05 (openapi v0.0.38), fields trimmed
NODE_2205 = {
    "name": "g1",
    "cpus": 96,
    "gres": "gpu:a100:8(S:0-1)",
    "gres_drained": "N/A",
    "gres_used": "gpu:a100:2(IDX:0-1)",
    "real_memory": 1048576,
    "state": "mixed",
    "state_flags": ["DRAIN"],
    "partitions": ["gpu"],
}
# `scontrol show nodes --json`, data_parser v0.0.40+: states as a list, numbers maybe wrapped
NODE_NEW = {
    "name": "g2",
    "cpus": 64,
    "gres": "gpu:h100:4(S:0),gpu:h100:4(S:1)",
    "gres_used": "gpu:h100:3(IDX:0,2-3)",
    "real_memory": {"set": True, "infinite": False, "number": 524288},
    "state": ["IDLE"],
}
CPU_NODE = {"name": "c1", "cpus": 32, "gres": "", "gres_used": "", "real_memory": 65536, "state": ["IDLE"]}


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


CONF = "SwitchName=leaf0 Nodes=g[1-2]\nSwitchName=leaf1 Nodes=g[3-4],cpu1\nSwitchName=top Switches=leaf[0-1]\n"


def _node(name: str, gpus: int, used: int = 0, state: str = "IDLE") -> dict:
    return {
        "name": name,
        "gres": f"gpu:h100:{gpus}",
        "gres_used": f"gpu:h100:{used}",
        "cpus": 64,
        "real_memory": 262144,
        "state": [state],
    }


def test_an_instance_on_the_slurm_nodes_has_their_gpus():
    doc = {
        "nodes": [
            _node("g1", 8, 2),
            _node("g2", 8, state="DOWN"),
            _node("g3", 4),
            _node("g4", 4, 4),
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
    doc = {"nodes": [_node("g1", 8), _node("g2", 8), _node("g9", 8), _node("g10", 2)]}
    with pytest.raises(InvalidInputError) as e:
        instance_from_slurm(CONF, [200, 50], nodes=read_slurm_nodes(json.dumps(doc)), jobs=2)
    msgs = problems_of(e)
    assert "topology.conf lists node(s) the nodes JSON does not: g3,g4,cpu1" in msgs
    assert "the nodes JSON lists GPU node(s) on no switch of topology.conf: g9,g10" in msgs


def test_a_flat_topology_puts_every_node_on_one_switch():
    nodes = read_slurm_nodes(json.dumps({"nodes": [_node("g1", 8), _node("g2", 4)]}))
    inst = instance_from_slurm(TREE_YAML, [100], nodes=nodes, topology_format="yaml", topology_name="plain", jobs=2)
    assert [w.id for w in inst.switches] == ["flat"] and cluster_of(inst).bottleneck(["g1", "g2"]) == 100


# ----------------------------------------------------------------------------- export


@pytest.fixture(scope="module")
def cluster():
    """The generated instance of the daemon tests (with CPUs and memory, so that they are
    exported and read back), a greedy solution, and a hand-made one whose job j1 spreads
    3 + 1 workers over two racks."""
    inst = generate(racks=2, servers_per_rack=3, gpus_per_server=4, jobs=4, seed=1, cpu_memory=True)
    sol = placement.solve(inst, "greedy")
    assert sol.status.has_placement
    hand = {"j0": {"s0": 1}, "j1": {"s1": 3, "s4": 1}, "j2": {"s0": 1}, "j3": {"s3": 4, "s5": 4}}
    assert placement.validate(inst, hand) == []
    uneven = Solution(inst.name, "by hand", Status.FEASIBLE, None, None, hand, (), {}, {})
    return inst, sol, uneven


def test_sbatch_scripts_pin_nodes_ranks_and_gpus(cluster):
    inst, sol, uneven = cluster
    files = sbatch_files(inst, uneven, command="torchrun train.py --steps 10", partition="gpu", time_limit="2:00:00")
    assert sorted(files) == sorted(f"{j}.{ext}" for j in ("j0", "j1", "j2", "j3") for ext in ("sbatch", "hosts"))
    j3 = files["j3.sbatch"]
    for line in (
        "#SBATCH --job-name=j3",
        "#SBATCH --nodes=2",
        "#SBATCH --nodelist=s3,s5",
        "#SBATCH --ntasks=8",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --switches=1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=2:00:00",
        f"#SBATCH --cpus-per-task={int(inst.job_by_id['j3'].cpus_per_worker)}",
        'export SLURM_HOSTFILE="${SLURM_SUBMIT_DIR:-.}/j3.hosts"',
        "srun --distribution=arbitrary torchrun train.py --steps 10",
    ):
        assert line in j3.splitlines()
    j1 = files["j1.sbatch"].splitlines()
    assert "#SBATCH --gpus-per-task=1" in j1 and "#SBATCH --distribution=arbitrary" in j1
    assert "#SBATCH --switches=2" in j1 and not any("--gres" in ln or "--ntasks-per-node" in ln for ln in j1)
    assert files["j1.hosts"].split() == rank_order(inst, {"s1": 3, "s4": 1}) == ["s1", "s1", "s1", "s4"]
    even = sbatch_files(inst, sol, job_name_prefix="exp7-")
    for j, a in sol.assignment.items():
        assert f"#SBATCH --job-name=exp7-{j}" in even[f"{file_stem(j)}.sbatch"]
        assert sorted(even[f"{file_stem(j)}.hosts"].split()) == sorted(s for s, k in a.items() for _ in range(k))


def test_odd_job_names_are_quoted_and_bad_options_refused(cluster):
    inst, _, uneven = cluster
    renamed = inst.replace(
        jobs=tuple(j if j.id != "j1" else type(j)(**{**j.__dict__, "id": "my job $1"}) for j in inst.jobs)
    )
    a = {("my job $1" if j == "j1" else j): dict(v) for j, v in uneven.assignment.items()}
    sol = Solution(renamed.name, "by hand", Status.FEASIBLE, None, None, a, (), {}, {})
    files = sbatch_files(renamed, sol)
    stem = file_stem("my job $1")
    assert '#SBATCH --job-name="my job $1"' in files[f"{stem}.sbatch"] and f"{stem}.hosts" in files
    with pytest.raises(InvalidInputError) as e:
        sbatch_files(inst, uneven, command="a\nb", time_limit="soon", partition="g p")
    msgs = problems_of(e)
    assert "command must be one non-empty line" in msgs and "time_limit must be a Slurm time" in msgs
    assert "partition must be a Slurm partition name" in msgs
    odd = inst.replace(
        servers=tuple(s if s.id != "s1" else type(s)(**{**s.__dict__, "id": "s[1]"}) for s in inst.servers)
    )
    with pytest.raises(InvalidInputError, match=r"server 's\[1\]': not usable as a Slurm node name"):
        topology_conf(odd)


@pytest.mark.parametrize(
    "kw",
    [
        dict(racks=2, servers_per_rack=3),
        dict(topology="multi-pod", pods=2, racks=2, servers_per_rack=2),
        dict(racks=3, servers_per_rack=1),
    ],
)
def test_topology_conf_reads_back_as_the_same_bandwidth_tree(kw):
    inst = generate(jobs=3, seed=3, **kw)
    text = topology_conf(inst)
    nodes, kids = parse_topology_conf(text)
    tree = switch_tree(inst)
    assert (nodes, kids) == (tree.nodes, tree.kids)
    cl = cluster_of(inst)
    for servers in nodes.values():  # a leaf is a domain of the instance: its servers share its bandwidth
        assert len(servers) == 1 or cl.domain_of(servers).servers == tuple(servers)
    assert sorted(n for ns in nodes.values() for n in ns) == sorted(s.id for s in inst.servers)


def _hand_cluster(links: list[tuple[str, str, float]]) -> placement.Instance:
    servers = tuple(Server(sid, 4, "A100", 2400.0) for sid in ("a", "b", "c", "d"))
    switches = tuple(Switch(w) for w in ("tor0", "core") if any(w in (x, y) for x, y, _ in links))
    return Instance(
        name="hand",
        servers=servers,
        jobs=(Job("j", 2, 100.0, 10.0),),
        switches=switches,
        links=tuple(Link(x, y, bw) for x, y, bw in links),
    )


def test_servers_beside_inner_domains_get_their_own_leaf():
    # a, b under tor0; c straight on the core; d linked to nothing
    inst = _hand_cluster([("a", "tor0", 100), ("b", "tor0", 100), ("tor0", "core", 50), ("c", "core", 50)])
    tree = switch_tree(inst)
    assert tree.nodes == {"tor0": ["a", "b"], "tier2-0-nodes": ["c"], "d-switch": ["d"]}
    assert tree.kids == {"tier2-0": ["tor0", "tier2-0-nodes"]}
    assert parse_topology_conf(topology_conf(inst)) == (tree.nodes, tree.kids)  # what Slurm accepts
    sol = Solution(inst.name, "by hand", Status.FEASIBLE, None, None, {"j": {"a": 1, "c": 1}}, (), {}, {})
    assert "#SBATCH --switches=2" in sbatch_files(inst, sol)["j.sbatch"]
    alone = _hand_cluster([])
    assert switch_tree(alone).nodes == {} and topology_conf(alone).count("SwitchName") == 0
    assert "TopologyPlugin" not in slurm_conf(alone)
    sol = Solution(alone.name, "by hand", Status.FEASIBLE, None, None, {"j": {"a": 2}}, (), {}, {})
    assert "--switches" not in sbatch_files(alone, sol)["j.sbatch"]


def test_a_flat_topology_without_nodes_says_what_is_missing():
    with pytest.raises(InvalidInputError, match="a flat topology names no node: give the nodes' JSON"):
        instance_from_slurm(TREE_YAML, [100], topology_format="yaml", topology_name="plain", jobs=2)
    with pytest.raises(InvalidInputError, match="topology_name selects a topology of a topology.yaml"):
        instance_from_slurm(CONF, [100, 50], topology_name="x")


def test_slurm_conf_describes_every_node():
    inst = generate(racks=1, servers_per_rack=3, gpus_per_server=8, gpu_types="H100", jobs=2, seed=1)
    text = slurm_conf(inst, auth="none", port=7000, cluster_name="c1")
    assert "NodeName=s0 Gres=gpu:H100:8 CPUs=8 State=UNKNOWN" in text  # no CPUs in the instance: one per GPU
    assert "PartitionName=gpu Nodes=s[0-2] Default=YES" in text and "SlurmdPort=7001" in text
    assert "TopologyPlugin=topology/tree" in text and "AuthType=auth/none" in text
    assert gres_type("NVIDIA A100 80GB") == "NVIDIA_A100_80GB" and gres_type("unknown") is None
    with pytest.raises(InvalidInputError, match="auth must be 'munge' or 'none'"):
        slurm_conf(inst, auth="jwt")


# ----------------------------------------------------------------------------- real slurmctld


MISSING = missing_binaries()
needs_slurm = pytest.mark.skipif(bool(MISSING), reason=f"Slurm programs not installed: {', '.join(MISSING)}")


@pytest.fixture(scope="module")
def ctld(cluster, tmp_path_factory):
    inst, _, _ = cluster
    with running_slurmctld(inst, tmp_path_factory.mktemp("slurmctld")) as c:
        yield c


def _job_record(text: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def _submit_all(ctld, inst, sol, prefix: str) -> None:
    """Every exported script passes ``sbatch --test-only`` (the scheduler finds its nodes,
    GPUs, CPUs and memory) and is queued by ``sbatch --hold``, recording what it asked."""
    folder = ctld.folder / prefix
    folder.mkdir()
    files = sbatch_files(inst, sol, job_name_prefix=prefix, partition="gpu")
    for name, text in files.items():
        (folder / name).write_text(text)
    tree = switch_tree(inst)
    for j, a in sol.assignment.items():
        a = {s: k for s, k in a.items() if k > 0}
        stem = file_stem(j)
        env = {"SLURM_HOSTFILE": f"{stem}.hosts"}
        test = ctld.run("sbatch", "--test-only", f"{stem}.sbatch", env=env, cwd=folder)
        m = re.search(r"to start at .* on nodes (\S+) in partition gpu", test.stderr)
        assert m and sorted(expand_hostlist(m.group(1))) == sorted(a), test.stderr
        job_id = ctld.run("sbatch", "--hold", "--parsable", f"{stem}.sbatch", env=env, cwd=folder).stdout.strip()
        rec = _job_record(ctld.run("scontrol", "show", "job", "-o", job_id).stdout)
        workers = sum(a.values())
        assert rec["JobName"] == prefix + j and rec["JobState"] == "PENDING" and rec["Reason"] == "JobHeldUser"
        assert sorted(expand_hostlist(rec["ReqNodeList"])) == sorted(a)
        assert rec["NumNodes"].split("-")[0] == str(len(a)) and rec["NumTasks"] == str(workers)
        if len(set(a.values())) == 1:
            assert re.fullmatch(rf"gres[:/]gpu:{next(iter(a.values()))}", rec["TresPerNode"])
        else:
            assert re.fullmatch(r"gres[:/]gpu:1", rec["TresPerTask"])
        job = inst.job_by_id[j]
        assert rec["CPUs/Task"] == str(int(job.cpus_per_worker))
        assert re.fullmatch(rf"gres[:/]gpu:{int(job.memory_gb_per_worker * 1024)}", rec["MemPerTres"])
        assert rec["Switches"].split("@")[0] == str(len({tree.leaf_of[s] for s in a}))


@needs_slurm
def test_slurmctld_accepts_every_exported_script(ctld, cluster):
    inst, sol, uneven = cluster
    _submit_all(ctld, inst, sol, "greedy-")
    _submit_all(ctld, inst, uneven, "uneven-")


@needs_slurm
def test_slurmctld_refuses_a_script_asking_more_gpus_than_its_node_has(ctld, cluster):
    inst, sol, _ = cluster
    j, a = next((j, a) for j, a in sol.assignment.items() if len(a) == 1)
    text = sbatch_files(inst, sol)[f"{file_stem(j)}.sbatch"]
    k = next(iter(a.values()))
    over = re.sub(r"--gres=gpu:\d+", "--gres=gpu:5", text).replace(f"--ntasks={k}", "--ntasks=5")
    over = over.replace(f"--ntasks-per-node={k}", "--ntasks-per-node=5")
    (ctld.folder / "over.sbatch").write_text(over)
    r = ctld.run("sbatch", "--test-only", "over.sbatch", check=False)
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr


@needs_slurm
def test_the_daemon_reads_the_exported_topology(ctld, cluster):
    inst, _, _ = cluster
    shown = ctld.run("scontrol", "show", "topology").stdout
    tree = switch_tree(inst)
    for leaf, servers in tree.nodes.items():
        assert re.search(
            rf"SwitchName={re.escape(leaf)} Level=0 .*Nodes={re.escape(compress_hostlist(servers))}", shown
        )
    for sw, cs in tree.kids.items():
        assert re.search(rf"SwitchName={re.escape(sw)} Level=1 .*Switches={re.escape(compress_hostlist(cs))}", shown)


def _check_read_back(nodes, inst) -> None:
    assert list(nodes) == [s.id for s in inst.servers]
    for s in inst.servers:
        n = nodes[s.id]
        assert (n.gpus, n.gpu_type, n.used_gpus) == (s.gpus, gres_type(s.gpu_type), 0)
        assert (n.cpus, n.memory_gb) == (s.cpus, s.memory_gb)


@needs_slurm
def test_sinfo_json_reads_back_the_instance(ctld, cluster):
    inst, _, _ = cluster
    nodes = read_slurm_nodes(ctld.run("sinfo", "--json").stdout)
    _check_read_back(nodes, inst)
    # and the way in: the daemon's nodes on the exported topology make the same cluster
    back = instance_from_slurm(topology_conf(inst), [100, 50], nodes=nodes, jobs=3, seed=1)
    assert [(s.id, s.gpus, s.cpus, s.memory_gb) for s in back.servers] == [
        (s.id, s.gpus, s.cpus, s.memory_gb) for s in inst.servers
    ]
    a, b = cluster_of(inst), cluster_of(back)
    for x in inst.servers:
        for y in inst.servers:
            assert (a.domain_of([x.id, y.id]) is None) == (b.domain_of([x.id, y.id]) is None)
            if a.domain_of([x.id, y.id]) is not None:
                assert a.domain_of([x.id, y.id]).servers == b.domain_of([x.id, y.id]).servers


@needs_slurm
def test_scontrol_show_nodes_json_reads_back_the_instance(ctld, cluster):
    inst, _, _ = cluster
    r = ctld.run("scontrol", "show", "nodes", "--json", check=False)
    if r.returncode != 0 and "unrecognized option" in r.stderr:
        pytest.skip(f"this scontrol has no --json (Slurm 23.02+): {ctld.run('scontrol', '--version').stdout.strip()}")
    assert r.returncode == 0, r.stderr
    _check_read_back(read_slurm_nodes(r.stdout), inst)


@needs_slurm
def test_slurm_expands_our_host_lists_as_we_do(ctld):
    lists = [
        ["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02"],
        ["n8", "n09", "n10", "n11", "x"],
        ["b010", "b011", "b012", "b9", "a1", "a1"],
        ["r1-n1", "r1-n2", "r2-n1", "r10-n007", "r10-n008"],
    ]
    for hosts in lists:
        shown = ctld.run("scontrol", "show", "hostnames", compress_hostlist(hosts)).stdout.split()
        assert shown == hosts


@needs_slurm
def test_round_trip_sinfo_to_sbatch_and_back(ctld, cluster, tmp_path):
    """The CLI the README shows: the daemon's `sinfo --json` and the topology.conf make a
    cluster (import-slurm), a plan (solve), scripts (export --to slurm) that slurmctld queues
    on the planned nodes, and import-placement reads the same plan back."""
    from click.testing import CliRunner

    from placement.cli.main import cli

    inst, _, _ = cluster
    (tmp_path / "topology.conf").write_text(topology_conf(inst))
    (tmp_path / "sinfo.json").write_text(ctld.run("sinfo", "--json").stdout)
    runner = CliRunner()
    cluster_json, plan = tmp_path / "cluster.json", tmp_path / "plan.json"
    r = runner.invoke(
        cli,
        ["import-slurm", str(tmp_path / "topology.conf"), "--level-gbps", "100,50", "--nodes-json"]
        + [str(tmp_path / "sinfo.json"), "--jobs", "3", "--job-mix", "large", "--seed", "4", "-o", str(cluster_json)],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        cli,
        ["import-slurm", str(tmp_path / "topology.conf"), "--level-gbps", "100,50", "--nodes-json"]
        + [str(tmp_path / "sinfo.json"), "--gpus-per-server", "2"],
    )
    assert r.exit_code == 2 and "--gpus-per-server: the servers come from --nodes-json" in r.output
    assert runner.invoke(cli, ["solve", str(cluster_json), "-m", "greedy", "-q", "-o", str(plan)]).exit_code == 0
    planned = json.loads(plan.read_text())["assignment"]
    assert any(len(a) > 1 for a in planned.values())
    folder = tmp_path / "scripts"
    r = runner.invoke(cli, ["export", str(plan), "--instance", str(cluster_json), "--to", "slurm", "-o", str(folder)])
    assert r.exit_code == 0, r.output
    for j, a in planned.items():
        stem = file_stem(j)
        env = {"SLURM_HOSTFILE": f"{stem}.hosts"}
        job_id = ctld.run("sbatch", "--hold", "--parsable", f"{stem}.sbatch", env=env, cwd=folder).stdout.strip()
        rec = _job_record(ctld.run("scontrol", "show", "job", "-o", job_id).stdout)
        assert sorted(expand_hostlist(rec["ReqNodeList"])) == sorted(a) and rec["JobName"] == j
    back = tmp_path / "back.json"
    r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(cluster_json), "-o", str(back)])
    assert r.exit_code == 0, r.output
    assert json.loads(back.read_text())["assignment"] == planned

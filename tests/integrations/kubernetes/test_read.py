"""The Kubernetes importer (``placement.integrations.kubernetes``) on kubectl-shaped fixtures:
a GKE A3 cluster with a CPU-only node, an on-premises DGX cluster labelled by NVIDIA Topograph
(with a cordoned and a NotReady node) and its pods and Volcano HyperNodes, an EKS p5 cluster
whose network has two top-level nodes."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest
from support.k8s_schemas import validate_builtin, validate_custom
from support.paths import DATA as TEST_DATA

import placement
from placement.errors import InvalidInputError, MethodUnavailableError
from placement.formats.instance import checked, instance_from_dict, instance_to_dict
from placement.integrations.kubernetes import ROOT_SWITCH, default_level_gbps, instance_from_kubernetes
from placement.model.catalog import gpu_profile

DATA = TEST_DATA / "k8s"
NVIDIA = "network.topology.nvidia.com"
GPU = "nvidia.com/gpu"


def load(name: str) -> Any:
    return json.loads((DATA / f"{name}.json").read_text())


def problems_of(nodes: Any, **kw: Any) -> list[str]:
    with pytest.raises(InvalidInputError) as e:
        instance_from_kubernetes(nodes, jobs=3, seed=0, **kw)
    return list(e.value.problems)


def gpu_node(name: str, gpus: Any = "8", labels: dict[str, str] | None = None, **alloc: Any) -> dict[str, Any]:
    """A minimal Node as the API returns it: name, labels, allocatable, a Ready condition."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: gpus, **alloc},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def node_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def gpu_pod(name: str, node: str | None, gpus: Any, phase: str = "Running", **spec: Any) -> dict[str, Any]:
    c = {"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": {"limits": {GPU: gpus}}}
    s = {"containers": [c], **spec}
    if node is not None:
        s["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": s,
        "status": {"phase": phase},
    }


def links_of(inst: placement.Instance) -> set[tuple[str, str, float]]:
    return {(ln.source, ln.target, ln.bandwidth_gbps) for ln in inst.links}


# --------------------------------------------------------------------- the fixtures are real
@pytest.mark.parametrize(
    "name, model",
    [
        ("gke-a3-nodes", "V1NodeList"),
        ("dgx-nodes", "V1NodeList"),
        ("eks-p5-nodes", "V1NodeList"),
        ("dgx-pods", "V1PodList"),
    ],
)
def test_fixtures_are_objects_the_api_server_and_the_official_client_accept(name, model):
    from kubernetes.client import ApiClient

    data = load(name)
    obj = ApiClient()._ApiClient__deserialize(data, model)
    assert len(obj.items) == len(data["items"]) > 0
    assert {it["kind"] for it in data["items"]} == {model[2:-4]}
    assert {i: validate_builtin(it) for i, it in enumerate(data["items"]) if validate_builtin(it)} == {}


def test_hypernode_fixture_follows_the_volcano_crd():
    items = load("dgx-hypernodes")["items"]
    assert {(it["apiVersion"], it["kind"]) for it in items} == {("topology.volcano.sh/v1alpha1", "HyperNode")}
    assert {it["metadata"]["name"]: validate_custom(it) for it in items} == {it["metadata"]["name"]: [] for it in items}
    bad = copy.deepcopy(items[0])
    bad["spec"]["members"][0]["selector"]["regexMatch"] = {"pattern": "dgx-a"}  # two selectors: the CEL rule
    assert validate_custom(bad)


# ------------------------------------------------------------------------------------- GKE
def test_gke_cluster_becomes_servers_on_its_subblocks_and_block():
    inst = instance_from_kubernetes(load("gke-a3-nodes"), jobs=4, seed=1)
    assert [s.id for s in inst.servers] == [
        f"gke-a3-train-a3-pool-2c9d41e0-{x}" for x in ("4b8v", "9kzt", "m2hx", "w7qd")
    ]
    s = inst.servers[0]
    assert (s.gpus, s.used_gpus, s.gpu_type) == (8, 0, "nvidia-h100-80gb")
    assert s.intra_bandwidth_gbps == gpu_profile("H100")[1]
    assert s.cpus == 206.93  # "206930m"
    assert s.memory_gb == round(1855713832 / 2**20, 3)  # "1855713832Ki" in GiB
    sub, block = "cloud.google.com/gce-topology-subblock", "cloud.google.com/gce-topology-block"
    assert inst.metadata["kubernetes"]["level_labels"] == [sub, block]
    assert [w.id for w in inst.switches] == [
        f"{sub}=9f2c61d0ab",
        f"{sub}=c07e3a51f4",
        f"{block}=3b7d1e0c9a5f42e8b6d2c4a1f0e9d8c7",
    ]
    assert (s.id, f"{sub}=9f2c61d0ab", 200.0) in links_of(inst)
    assert (f"{sub}=c07e3a51f4", f"{block}=3b7d1e0c9a5f42e8b6d2c4a1f0e9d8c7", 100.0) in links_of(inst)
    cluster = placement.cluster_of(inst)
    ids = [x.id for x in inst.servers]
    assert cluster.bandwidth(ids[:3]) == 200.0  # one sub-block
    assert cluster.bandwidth(ids[2:]) == 100.0  # across the block
    assert "4 GPU nodes, 32 GPUs" in inst.source and "left out: 1 without GPUs" in inst.source
    assert "generator options --jobs 4 --seed 1" in inst.source
    assert len(inst.jobs) == 4


def test_imported_instance_passes_the_loader_and_round_trips():
    inst = instance_from_kubernetes(load("dgx-nodes"), pods=load("dgx-pods"), jobs=5, seed=2)
    assert checked(inst) == inst
    doc = json.loads(json.dumps(instance_to_dict(inst)))
    assert instance_from_dict(doc) == inst
    assert doc["metadata"]["kubernetes"]["level_labels"] == [f"{NVIDIA}/leaf", f"{NVIDIA}/spine", f"{NVIDIA}/core"]


@pytest.mark.parametrize("fixture, pods", [("gke-a3-nodes", None), ("dgx-nodes", "dgx-pods"), ("eks-p5-nodes", None)])
def test_greedy_solves_the_imported_cluster(fixture, pods):
    inst = instance_from_kubernetes(
        load(fixture), pods=load(pods) if pods else None, jobs=4, seed=3, admission="best_effort"
    )
    sol = placement.solve(inst, "greedy", seed=0)
    assert sol.status.has_placement
    assert sol.assignment and placement.validate(inst, sol.assignment) == []
    for job in sol.assignment.values():  # never on a GPU that a pod holds
        for sid, w in job.items():
            assert w <= inst.server_by_id[sid].free_gpus


def test_the_import_is_seeded():
    a = instance_from_kubernetes(load("gke-a3-nodes"), jobs=6, seed=7)
    assert a == instance_from_kubernetes(load("gke-a3-nodes"), jobs=6, seed=7)
    assert a != instance_from_kubernetes(load("gke-a3-nodes"), jobs=6, seed=8)


# ---------------------------------------------------------------------- DGX, pods, nodes left out
def test_pods_set_the_gpus_in_use_by_kubernetes_effective_request_rule():
    inst = instance_from_kubernetes(load("dgx-nodes"), pods=load("dgx-pods"), jobs=3, seed=0)
    used = {s.id: s.used_gpus for s in inst.servers}
    # a01/a02: 8-GPU workers; b01: init container 4 > app 2; b02: sidecar 1 + app 2 (a Succeeded
    # 4-GPU pod does not count); c01: only a Failed pod; c02: one inference pod; a Pending pod
    # without a node and the pod on the NotReady node count nowhere
    assert used == {"dgx-a01": 8, "dgx-a02": 8, "dgx-b01": 4, "dgx-b02": 3, "dgx-c01": 0, "dgx-c02": 1}
    assert "24 GPUs in use by 5 pods" in inst.source


def test_cordoned_and_not_ready_nodes_are_left_out_and_listed():
    inst = instance_from_kubernetes(load("dgx-nodes"), jobs=3, seed=0)
    ids = {s.id for s in inst.servers}
    assert ids == {"dgx-a01", "dgx-a02", "dgx-b01", "dgx-b02", "dgx-c01", "dgx-c02"}
    meta = inst.metadata["kubernetes"]
    assert (meta["unschedulable"], meta["not_ready"]) == (["dgx-b03"], ["dgx-c03"])
    assert "left out: 1 without GPUs, 1 cordoned, 1 NotReady" in inst.source
    assert all(s.used_gpus == 0 for s in inst.servers)  # without pods, every GPU is free


def test_a_node_without_a_ready_condition_is_kept():
    n = gpu_node("gpu-0")
    del n["status"]["conditions"]
    inst = instance_from_kubernetes(node_list(n, gpu_node("gpu-1")), jobs=2, seed=0)
    assert [s.id for s in inst.servers] == ["gpu-0", "gpu-1"]


def test_gpu_types_and_their_bandwidth_inside_a_server():
    inst = instance_from_kubernetes(load("dgx-nodes"), jobs=3, seed=0)
    types = {s.id: (s.gpu_type, s.intra_bandwidth_gbps) for s in inst.servers}
    assert types["dgx-a01"] == ("NVIDIA-H100-80GB-HBM3", gpu_profile("H100")[1])
    assert types["dgx-c01"] == ("NVIDIA-A100-SXM4-80GB", gpu_profile("A100")[1])
    assert gpu_profile("H100")[1] != gpu_profile("A100")[1]
    family = gpu_node("a", labels={"nvidia.com/gpu.family": "hopper"})
    product = gpu_node("b", labels={"nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.product": "NVIDIA-H200"})
    inst = instance_from_kubernetes(node_list(family, product, gpu_node("c")), jobs=2, seed=0)
    assert [s.gpu_type for s in inst.servers] == ["hopper", "NVIDIA-H200", "unknown"]


def test_the_topograph_tree_and_its_default_bandwidths():
    inst = instance_from_kubernetes(load("dgx-nodes"), jobs=3, seed=0)
    leaf, spine, core = (f"{NVIDIA}/{x}" for x in ("leaf", "spine", "core"))
    assert links_of(inst) == {
        ("dgx-a01", f"{leaf}=leaf-a", 200.0),
        ("dgx-a02", f"{leaf}=leaf-a", 200.0),
        ("dgx-b01", f"{leaf}=leaf-b", 200.0),
        ("dgx-b02", f"{leaf}=leaf-b", 200.0),
        ("dgx-c01", f"{leaf}=leaf-c", 200.0),
        ("dgx-c02", f"{leaf}=leaf-c", 200.0),
        (f"{leaf}=leaf-a", f"{spine}=spine-1", 100.0),
        (f"{leaf}=leaf-b", f"{spine}=spine-1", 100.0),
        (f"{leaf}=leaf-c", f"{spine}=spine-2", 100.0),
        (f"{spine}=spine-1", f"{core}=core-1", 50.0),
        (f"{spine}=spine-2", f"{core}=core-1", 50.0),
    }
    assert default_level_gbps(4) == [200.0, 100.0, 50.0, 25.0]


def test_level_labels_and_level_gbps_chosen_by_the_user():
    nodes = load("dgx-nodes")
    for item in nodes["items"][1:]:  # NVLink domains: not a tier of the default tree
        item["metadata"]["labels"][f"{NVIDIA}/accelerator"] = "nvl-" + item["metadata"]["labels"][f"{NVIDIA}/leaf"]
    inst = instance_from_kubernetes(nodes, jobs=3, seed=0)
    assert f"{NVIDIA}/accelerator" not in inst.metadata["kubernetes"]["level_labels"]
    labels = [f"{NVIDIA}/accelerator", f"{NVIDIA}/spine"]
    inst = instance_from_kubernetes(nodes, level_labels=labels, level_gbps=[3200, 400, 100], jobs=3, seed=0)
    assert inst.metadata["kubernetes"]["level_labels"] == labels
    assert ("dgx-a01", f"{NVIDIA}/accelerator=nvl-leaf-a", 3200.0) in links_of(inst)
    assert (f"{NVIDIA}/accelerator=nvl-leaf-c", f"{NVIDIA}/spine=spine-2", 400.0) in links_of(inst)
    assert (f"{NVIDIA}/spine=spine-1", ROOT_SWITCH, 100.0) in links_of(inst)  # two spines: a root joins them
    assert "level bandwidths 3200,400,100 Gbit/s (the last into the root switch 'cluster')" in inst.source


def test_without_topology_one_switch_joins_every_server():
    nodes = node_list(gpu_node("gpu-0"), gpu_node("gpu-1", "4"), gpu_node("cpu-0", "0"))
    for inst in (
        instance_from_kubernetes(nodes, jobs=2, seed=0),
        instance_from_kubernetes(load("dgx-nodes"), level_labels=[], level_gbps=[100], jobs=2, seed=0),
    ):
        assert [w.id for w in inst.switches] == [ROOT_SWITCH]
        assert {ln.target for ln in inst.links} == {ROOT_SWITCH}
        assert {ln.source for ln in inst.links} == {s.id for s in inst.servers}
        assert inst.metadata["kubernetes"]["level_labels"] == []
    assert {ln.bandwidth_gbps for ln in inst.links} == {100.0}
    named = instance_from_kubernetes(node_list(gpu_node("cluster"), gpu_node("gpu-1")), jobs=2, seed=0)
    assert [w.id for w in named.switches] == ["/cluster"]  # a node may be called "cluster"


# ------------------------------------------------------------------------------------- EKS
def test_eks_layers_innermost_first_and_a_root_over_two_top_layers():
    inst = instance_from_kubernetes(load("eks-p5-nodes"), jobs=3, seed=0)
    layer = "topology.k8s.aws/network-node-layer-"
    assert inst.metadata["kubernetes"]["level_labels"] == [f"{layer}3", f"{layer}2", f"{layer}1"]
    assert all(s.gpu_type == "unknown" for s in inst.servers)  # no GPU feature discovery labels on EKS
    assert (f"{layer}1=nn-1a4f0c2e9b7d3a615", ROOT_SWITCH, 25.0) in links_of(inst)
    assert (f"{layer}1=nn-1d07b3e6a2c9f1584", ROOT_SWITCH, 25.0) in links_of(inst)
    ids = [s.id for s in inst.servers]
    cluster = placement.cluster_of(inst)
    assert cluster.bandwidth(ids[:2]) == 200.0
    assert cluster.bandwidth(ids[2:]) == 100.0  # same layer 2, different layer 3
    assert cluster.bandwidth(ids[1:3]) == 25.0  # through the root
    (msg,) = problems_of(load("eks-p5-nodes"), level_gbps=[400, 200, 100])
    assert msg.startswith("level_gbps: the topology (node labels")
    assert "3 level(s) and a root switch 'cluster' joining its top switches, so 4 bandwidth(s); got 3" in msg
    ok = instance_from_kubernetes(load("eks-p5-nodes"), level_gbps=[400, 200, 100, 50], jobs=3, seed=0)
    assert (ids[0], f"{layer}3=nn-3f26a9d1c4e8b0735", 400.0) in links_of(ok)


# -------------------------------------------------------------------------------- HyperNodes
def test_hypernodes_give_the_same_tree_as_the_labels_they_were_written_from():
    by_hn = instance_from_kubernetes(
        load("dgx-nodes"), pods=load("dgx-pods"), hypernodes=load("dgx-hypernodes"), jobs=3, seed=0
    )
    by_labels = instance_from_kubernetes(load("dgx-nodes"), pods=load("dgx-pods"), jobs=3, seed=0)

    def plain(x: str) -> str:
        return x.split("/")[-1].split("=")[-1]

    assert {(plain(a), plain(b), g) for a, b, g in links_of(by_hn)} == {
        (plain(a), plain(b), g) for a, b, g in links_of(by_labels)
    }
    assert ("dgx-b02", "hypernode/leaf-b", 200.0) in links_of(by_hn)  # regexMatch
    assert ("dgx-c01", "hypernode/leaf-c", 200.0) in links_of(by_hn)  # labelMatch
    assert ("hypernode/spine-2", "hypernode/core-1", 50.0) in links_of(by_hn)
    assert by_hn.metadata["kubernetes"]["hypernode_tiers"] == [1, 2, 3]
    assert "6 Volcano HyperNodes, tiers 1, 2, 3" in by_hn.source
    assert checked(by_hn) == by_hn


def _hn(name: str, tier: int, *members: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": list(members)},
    }


def _node(name: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def _child(name: str) -> dict[str, Any]:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def test_hypernode_refusals_name_their_paths():
    hns = node_list(
        _hn("leaf-a", 1, _node("dgx-a01"), _node("dgx-a02"), _node("dgx-b01")),
        _hn("leaf-b", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "^dgx-b"}}}),
        _hn("leaf-c", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "dgx-c(0"}}}),
        _hn("spine-1", 2, _child("leaf-a"), _child("leaf-b"), _child("leaf-z")),
        _hn("spine-2", 2, _child("leaf-b"), {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "leaf"}}}),
        _hn("loop-1", 3, _child("loop-2")),
        _hn("loop-2", 4, _child("loop-1")),
        _hn("both", 1, {"type": "Node", "selector": {"exactMatch": {"name": "x"}, "regexMatch": {"pattern": "x"}}}),
    )
    p = problems_of(load("dgx-nodes"), hypernodes=hns)
    assert (
        "hypernodes.items[2].spec.members[0].selector.regexMatch.pattern 'dgx-c(0' is not a regular expression" in p[0]
    )
    assert "hypernodes.items[4].spec.members[1].selector.regexMatch: a HyperNode member is named by exactMatch" in p[1]
    assert (
        p[2]
        == "hypernodes.items[7].spec.members[0].selector must give one of exactMatch, regexMatch, labelMatch, got exactMatch, regexMatch"
    )
    assert (
        "hypernodes.items[3].spec.members[2].selector.exactMatch.name names HyperNode 'leaf-z', which is not in the list"
        in p
    )
    assert (
        "hypernodes.items[4].spec.members[0].selector.exactMatch.name: HyperNode 'leaf-b' is a member of both 'spine-1' and 'spine-2'"
        in p
    )
    assert any(x.startswith("hypernodes: HyperNodes form a cycle: loop-") for x in p)
    assert sum("cycle" in x for x in p) == 1
    assert any(
        "HyperNode 'loop-2' (tier 4) is a member of 'loop-1' (tier 3); a member must be of a lower tier" in x for x in p
    )
    assert "nodes.items[3]: GPU node 'dgx-b01' is a member of several HyperNodes: 'leaf-a', 'leaf-b'" in p
    assert "nodes.items[6]: GPU node 'dgx-c01' is a member of no HyperNode" in p
    assert "nodes.items[7]: GPU node 'dgx-c02' is a member of no HyperNode" in p


def test_hypernode_label_selectors_are_checked():
    bad = {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "Within", "values": ["ra"]},
        {"key": "rack", "operator": "In", "values": []},
        {"key": "rack", "operator": "Exists", "values": ["ra"]},
    ]}}}  # fmt: skip
    p = problems_of(load("dgx-nodes"), hypernodes=node_list(_hn("leaf", 1, bad)))
    at = "hypernodes.items[0].spec.members[0].selector.labelMatch.matchExpressions"
    assert f"{at}[0].operator must be one of In, NotIn, Exists, DoesNotExist, got 'Within'" in p
    assert f"{at}[1].values must not be empty with operator In" in p
    assert f"{at}[2].values must be empty with operator Exists, got ['ra']" in p


def test_hypernode_selectors_match_as_volcano_does():
    expr = {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "NotIn", "values": ["ra"]},
        {"key": "nvidia.com/gpu.present", "operator": "Exists"},
        {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
    ]}}}  # fmt: skip
    hns = node_list(
        _hn("a", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "a0[12]"}}}),  # searched, not anchored
        _hn("rest", 1, expr),
        _hn("empty", 1, {"type": "Node", "selector": {"labelMatch": {}}}),  # matches nothing
        _hn("top", 2, _child("a"), _child("rest"), _child("empty")),
    )
    inst = instance_from_kubernetes(load("dgx-nodes"), hypernodes=hns, jobs=3, seed=0)
    homes = {ln.source: ln.target for ln in inst.links if ln.source in inst.server_by_id}
    assert homes == {
        "dgx-a01": "hypernode/a",
        "dgx-a02": "hypernode/a",
        **dict.fromkeys(("dgx-b01", "dgx-b02", "dgx-c01", "dgx-c02"), "hypernode/rest"),
    }
    assert "hypernode/empty" not in {w.id for w in inst.switches}  # reaches no GPU node


def test_labels_and_hypernodes_together_are_refused():
    p = problems_of(load("dgx-nodes"), hypernodes=load("dgx-hypernodes"), level_labels=[f"{NVIDIA}/leaf"])
    assert p == ["level_labels: give level_labels or hypernodes as the topology, not both"]


# ------------------------------------------------------------------------- quantities and refusals
@pytest.mark.parametrize(
    "cpu, memory, cpus, memory_gb",
    [
        ("8", "1056Gi", 8.0, 1056.0),
        ("500m", "123Mi", 0.5, 0.12),
        ("1.5", "128974848", 1.5, 0.12),
        ("96", "129e6", 96.0, 0.12),
        ("7910m", "29316520Ki", 7.91, 27.958),
        ("2k", "1Ti", 2000.0, 1024.0),
    ],
)
def test_kubernetes_quantities(cpu, memory, cpus, memory_gb):
    inst = instance_from_kubernetes(node_list(gpu_node("g", cpu=cpu, memory=memory)), jobs=1, seed=0)
    assert (inst.servers[0].cpus, inst.servers[0].memory_gb) == (cpus, memory_gb)


def test_bad_quantities_are_all_reported_with_their_paths():
    nodes = node_list(
        gpu_node("ok"),
        gpu_node("frac", "1.5"),
        gpu_node("bytes", memory="8Gb"),
        gpu_node("neg", cpu="-4"),
        gpu_node("huge", "5000"),
        gpu_node("typed", 8),
        gpu_node("nan", cpu="NaN", memory=" 8Gi"),
        gpu_node("bool", True),
    )
    p = problems_of(nodes)
    assert p == [
        "nodes.items[1].status.allocatable[\"nvidia.com/gpu\"] must be a whole number of GPUs, got '1.5'",
        "nodes.items[2].status.allocatable[\"memory\"] is not a Kubernetes quantity: '8Gb'",
        "nodes.items[3].status.allocatable[\"cpu\"] must not be negative, got '-4'",
        'nodes.items[4].status.allocatable["nvidia.com/gpu"] must be at most 4096, got 5000',
        "nodes.items[6].status.allocatable[\"cpu\"] is not a Kubernetes quantity: 'NaN'",
        "nodes.items[6].status.allocatable[\"memory\"] is not a Kubernetes quantity: ' 8Gi'",
        'nodes.items[7].status.allocatable["nvidia.com/gpu"] must be a Kubernetes quantity such as "8", '
        '"500m" or "64Gi", got True',
    ]


def test_documents_that_are_not_node_lists_are_refused():
    assert problems_of([]) == [
        "nodes must be a Kubernetes NodeList (the JSON of `kubectl get nodes -o json`), got list"
    ]
    (p,) = problems_of({"kind": "Node", "metadata": {"name": "n"}})
    assert p.startswith("nodes must be a Kubernetes NodeList") and "kind 'Node' without an items list" in p
    p = problems_of(node_list(gpu_node("a"), gpu_node("a"), {"kind": "Pod"}, {"metadata": {}}))
    assert p == [
        "nodes.items[2].kind must be 'Node', got 'Pod'",
        "nodes.items[1].metadata.name duplicates node 'a' of nodes.items[0]",
        "nodes.items[3].metadata.name must be a non-empty string, got None",
    ]


def test_a_cluster_without_schedulable_gpu_nodes_is_refused():
    cordoned = gpu_node("g")
    cordoned["spec"]["unschedulable"] = True
    (p,) = problems_of(node_list(gpu_node("cpu", "0"), cordoned))
    assert (
        p
        == "nodes: no schedulable node has nvidia.com/gpu allocatable > 0 (2 nodes: 1 without GPUs, 1 cordoned, 0 NotReady)"
    )


def test_level_labels_missing_or_forming_no_tree_name_the_node_and_label():
    nodes = load("dgx-nodes")
    labels = [it["metadata"]["labels"] for it in nodes["items"]]
    del labels[3][f"{NVIDIA}/spine"]  # dgx-b01
    labels[4][f"{NVIDIA}/core"] = ""  # dgx-b02
    labels[6][f"{NVIDIA}/spine"] = "spine-1"  # dgx-c01: leaf-c under spine-1 and (dgx-c02) spine-2
    labels[2][f"{NVIDIA}/core"] = "core-2"  # dgx-a02: spine-1 under core-1 (dgx-a01) and core-2
    need = f"{NVIDIA}/leaf, {NVIDIA}/spine, {NVIDIA}/core; choose others with level_labels)"
    assert problems_of(nodes) == [
        f"nodes: the level labels form no tree: {NVIDIA}/spine=spine-1 lies under {NVIDIA}/core=core-1 "
        f"(node 'dgx-a01') and under {NVIDIA}/core=core-2 (node 'dgx-a02')",
        f"nodes.items[3].metadata.labels[\"{NVIDIA}/spine\"] is missing on GPU node 'dgx-b01' (every GPU node "
        f"needs each level label: {need}",
        f"nodes.items[4].metadata.labels[\"{NVIDIA}/core\"] has an empty value on GPU node 'dgx-b02' (every GPU "
        f"node needs each level label: {need}",
        f"nodes: the level labels form no tree: {NVIDIA}/leaf=leaf-c lies under {NVIDIA}/spine=spine-1 "
        f"(node 'dgx-c01') and under {NVIDIA}/spine=spine-2 (node 'dgx-c02')",
    ]
    assert instance_from_kubernetes(load("dgx-nodes"), jobs=2, seed=0)  # the same cluster, labelled right


def test_a_level_label_on_no_gpu_node_is_one_problem():
    p = problems_of(load("dgx-nodes"), level_labels=[f"{NVIDIA}/leaf", "example.com/row"])
    assert p == ["nodes: no GPU node has the level label 'example.com/row' (choose others with level_labels)"]
    assert problems_of(load("dgx-nodes"), level_labels=["rack", "rack"]) == ["level_labels names rack more than once"]


@pytest.mark.parametrize("gbps", [[200, 0, 50], [200, float("inf"), 50], [200, -1, 50]])
def test_level_gbps_must_be_positive_and_finite(gbps):
    (p,) = problems_of(load("dgx-nodes"), level_gbps=gbps)
    assert p.startswith("level_gbps must all be finite numbers > 0")


def test_level_gbps_must_give_one_bandwidth_per_level():
    (p,) = problems_of(load("dgx-nodes"), level_gbps=[200, 100])
    assert p == (
        f"level_gbps: the topology (node labels {NVIDIA}/leaf, {NVIDIA}/spine, {NVIDIA}/core) has 3 level(s), "
        "so 3 bandwidth(s); got 2"
    )


# ------------------------------------------------------------------------------------------ pods
def test_pod_gpu_counting_rules():
    nodes = node_list(gpu_node("g0"), gpu_node("g1"), gpu_node("g2"))
    pods = node_list(
        gpu_pod("limits-only", "g0", "2"),
        gpu_pod("pending-bound", "g0", "1", phase="Pending"),
        gpu_pod("done", "g0", "4", phase="Succeeded"),
        gpu_pod("unbound", None, "8", phase="Pending"),
        gpu_pod("elsewhere", "cpu-node", "8"),
        gpu_pod(
            "init-peak",
            "g1",
            "1",
            initContainers=[
                {"name": "side", "restartPolicy": "Always", "resources": {"limits": {GPU: "1"}}},
                {"name": "prep", "resources": {"limits": {GPU: "3"}, "requests": {GPU: "3"}}},
            ],
        ),  # max(1 + 1, 1 + 3) = 4
        gpu_pod("overhead", "g2", "2", overhead={GPU: "1"}),
    )
    inst = instance_from_kubernetes(nodes, pods=pods, jobs=2, seed=0)
    assert {s.id: s.used_gpus for s in inst.servers} == {"g0": 3, "g1": 4, "g2": 3}


def test_pods_holding_more_gpus_than_a_node_offers_leave_it_full():
    nodes = node_list(gpu_node("g0", "6"), gpu_node("g1"))  # a GPU went unhealthy: 6 of 8 allocatable
    pods = node_list(gpu_pod("w0", "g0", "8"))
    inst = instance_from_kubernetes(nodes, pods=pods, jobs=2, seed=0)
    assert (inst.servers[0].gpus, inst.servers[0].used_gpus) == (6, 6)
    assert inst.metadata["kubernetes"]["gpus_in_use_over_allocatable"] == {"g0": 8}
    assert "pods hold more GPUs than allocatable on g0 (8)" in inst.source
    assert checked(inst) == inst


def test_bad_pod_quantities_are_reported_with_their_paths():
    pods = node_list(
        gpu_pod("frac", "dgx-a01", "1.5"),
        gpu_pod("ok", "dgx-a02", "2"),
        {
            "kind": "Pod",
            "metadata": {"name": "differ", "namespace": "ml"},
            "spec": {
                "nodeName": "dgx-b01",
                "containers": [{"name": "c", "resources": {"limits": {GPU: "2"}, "requests": {GPU: "1"}}}],
            },
            "status": {"phase": "Running"},
        },
        gpu_pod("ignored", "cp-01", "oops"),  # on a node that is no server: not read
    )
    p = problems_of(load("dgx-nodes"), pods=pods)
    assert p == [
        "pods.items[0].spec.containers[0].resources.limits[\"nvidia.com/gpu\"] must be a whole number of GPUs, got '1.5'",
        'pods.items[2].spec.containers[0].resources: requests["nvidia.com/gpu"] (1) and limits["nvidia.com/gpu"] (2) '
        "must be equal (Kubernetes does not overcommit extended resources)",
    ]
    (p,) = problems_of(load("dgx-nodes"), pods={"kind": "PodList"})
    assert p.startswith("pods must be a Kubernetes PodList (the JSON of `kubectl get pods -A -o json`)")


# -------------------------------------------------------------------------------- the rest
def test_generator_options_are_checked():
    p = problems_of(load("gke-a3-nodes"), regime="stormy")
    assert len(p) == 1 and p[0].startswith("generator options: regime must be one of")


def test_a_name_option_names_the_instance():
    assert instance_from_kubernetes(load("gke-a3-nodes"), jobs=2, seed=0, name="gke-a3").name == "gke-a3"
    assert instance_from_kubernetes(load("gke-a3-nodes"), jobs=2, seed=0).name.startswith("k8s-")


def test_without_the_kubernetes_client_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    monkeypatch.setitem(sys.modules, "kubernetes.utils", None)
    with pytest.raises(MethodUnavailableError, match=r"pip install 'placement\[kubernetes\]'"):
        instance_from_kubernetes(load("gke-a3-nodes"), jobs=2, seed=0)

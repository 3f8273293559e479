import itertools

from hypothesis import given
from support.helpers import widest

import placement
from placement.instances.generate import generate
from placement.problem import cluster_of
from placement.testing import instances


@given(instances(max_servers=6))
def test_bottleneck_is_the_widest_path_by_definition(inst):
    ids = [s.id for s in inst.servers]
    cl = cluster_of(inst)
    for r in (2, 3):
        for combo in itertools.combinations(ids, r):
            assert cl.bottleneck(list(combo)) == widest(inst, list(combo))
    for sid in ids:
        assert cl.bandwidth([sid]) == inst.server_by_id[sid].intra_bandwidth_gbps


@given(instances(max_servers=6))
def test_domains_are_nested_and_hold_their_bandwidth(inst):
    cl = cluster_of(inst)
    for d in cl.domains:
        assert len(d.servers) >= 2
        assert cl.bottleneck(list(d.servers)) == d.bandwidth_gbps
        if d.parent is not None:
            p = cl.domains[d.parent]
            assert set(d.servers) < set(p.servers)
            assert p.bandwidth_gbps < d.bandwidth_gbps
        kids = [set(cl.domains[c].servers) for c in d.children]
        for a, b in itertools.combinations(kids, 2):
            assert not a & b


def test_leaf_spine_domains_are_racks_then_cluster():
    inst = generate(racks=3, servers_per_rack=4, nic_gbps=100, uplink_gbps=40, seed=0)
    cl = cluster_of(inst)
    racks = sorted((d for d in cl.domains if d.bandwidth_gbps == 100), key=lambda d: d.servers)
    assert [len(d.servers) for d in racks] == [4, 4, 4]
    top = [d for d in cl.domains if d.parent is None]
    assert len(top) == 1 and top[0].bandwidth_gbps == 40 and len(top[0].servers) == 12
    assert cl.bottleneck(["s0", "s1"]) == 100 and cl.bottleneck(["s0", "s5"]) == 40


def test_multi_pod_has_three_levels():
    inst = generate(
        topology="multi-pod", pods=2, racks=2, servers_per_rack=2, nic_gbps=100, uplink_gbps=50, core_gbps=10, seed=0
    )
    bws = sorted({d.bandwidth_gbps for d in cluster_of(inst).domains})
    assert bws == [10, 50, 100]
    assert cluster_of(inst).bottleneck(["s0", "s7"]) == 10


def test_graph_is_networkx_with_attributes():
    inst = placement.load_bundled("demo")
    g = cluster_of(inst).graph
    assert g.nodes["s0"]["kind"] == "server" and g.nodes["tor0"]["kind"] == "switch"
    assert all("bandwidth_gbps" in d for _, _, d in g.edges(data=True))

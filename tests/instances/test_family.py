"""The fleet family: twelve seeded shapes spanning what the issue asks of them."""

from __future__ import annotations

from placement.instances.family import FAMILY_SIZE, family
from placement.instances.generate import generate


def test_the_family_spans_the_shapes_asked_for_and_is_seeded():
    members = family(seed=0)
    assert len(members) == FAMILY_SIZE >= 12 and family(seed=0) == members and family(seed=1) != members
    regimes, gpus, tiers = set(), set(), set()
    for name, kw in members.items():
        assert 4 <= kw["servers_per_rack"] <= 48 and 0.5 <= kw["load"] <= 0.95
        tiers.add(kw["topology"])
        regimes.add(name.split("-", 2)[2].rsplit("-", 1)[0])  # family-NN-<regime>-<servers>
        inst = generate(**kw)
        assert 3000 <= len(inst.servers) <= 10000
        assert max(j.workers for j in inst.jobs) <= 64
        assert 3 <= len({s.gpu_type for s in inst.servers}) <= 8
        gpus |= {s.gpus for s in inst.servers}
        if "all-slow" in name:
            assert all(not s.slowdown.is_trivial for s in inst.servers)
    assert regimes == {"calm", "hot", "heavy-tail", "all-slow"}
    assert tiers == {"leaf-spine", "multi-pod"} and {1, 2, 4, 8} <= gpus

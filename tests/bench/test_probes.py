"""The measured law against its sources: Greyhound's single-node and four-node probe jobs in the
simulator land within 30% of Table 1 on all three figures (a wrong law fails), and the episode
accounting is exact on hand-made timelines."""

from __future__ import annotations

import dataclasses

import pytest

import placement.simulation.dynamics.measured as measured
from placement.bench.probes import PROBES, TABLE1, _episodes, bench_probes, probe_cluster


def test_episodes_merge_overlaps_and_touching_ones_and_clip_to_the_run():
    a = [(0.0, 1.0), (10.0, 2.0), (20.0, 1.0), (50.0, 3.0), (60.0, 1.0)]
    b = [(0.0, 1.0), (15.0, 1.5), (25.0, 1.0), (60.0, 2.0), (70.0, 1.0)]
    assert _episodes([a], 0.0, 100.0) == [10.0, 10.0]
    assert _episodes([a, b], 0.0, 100.0) == [15.0, 20.0]  # 10-25, and 50-60 then 60-70 as one
    assert _episodes([a, b], 12.0, 55.0) == [13.0, 5.0]
    assert _episodes([[(0.0, 1.0)]], 0.0, 100.0) == []


def test_the_probe_cluster_is_production_shaped_and_busy_as_asked():
    c = probe_cluster(busy=0.85, seed=1)
    assert len(c.servers) == 512 and sum(s.gpus for s in c.servers) == 4096
    assert sum(s.used_gpus == 8 for s in c.servers) == round(0.85 * 512)


@pytest.mark.parametrize("kind", ["single-node", "four-node"])
def test_the_probes_land_within_30_percent_of_table_1(kind):
    got = bench_probes(seeds=range(10), kinds=[kind])["probes"][kind]
    assert got["jobs"] == 10 * PROBES[kind]["jobs"]
    assert all(got["within"].values()), (got, TABLE1[kind])


def test_a_wrong_law_fails_the_check(monkeypatch):
    """Computation fail-slows four times as frequent, or congestion twice as mild: out of bounds."""
    monkeypatch.setattr(measured, "MEASURED", dataclasses.replace(measured.MEASURED, compute_per_day=1.0))
    assert not bench_probes(seeds=range(3), kinds=["single-node"])["probes"]["single-node"]["within"]["slowed"]
    mild = dataclasses.replace(measured.MEASURED, congestion_values=(1.2, 1.4))
    monkeypatch.setattr(measured, "MEASURED", mild)
    assert not bench_probes(seeds=range(3), kinds=["four-node"])["probes"]["four-node"]["within"]["increase"]

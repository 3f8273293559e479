"""The peers' benchmark: a small one runs end to end on a tiny cell, every peer with its own
placement, the same queue with our loop, the straggler-free twin and the clairvoyant reference,
and reports the ranking, the paired changes and the goals."""

from __future__ import annotations

import json

import pytest

from placement.bench import online
from placement.bench.online import Cell
from placement.bench.peers import PEERS, bench_peers, peer_configs
from placement.solving import get_method


def test_every_peer_has_a_registered_placement_and_the_loop_on_its_queue():
    configs = peer_configs(list(PEERS))
    for p, (queue, method, _) in PEERS.items():
        assert get_method(method).kind == "baseline"
        assert configs[p] == {"method": method, "knowledge": "oblivious", "queue": queue}
        assert configs[f"{p}-none"]["dynamics"] == "none"
        assert configs[f"{p}+loop"]["queue"] == queue and configs[f"{p}+loop"]["method"] == "auto"
    assert configs["clairvoyant"]["knowledge"] == "clairvoyant"
    assert not any(c.endswith("+clairvoyant") for c in configs)
    ceiling = peer_configs(["srtf"], ceiling=True)
    assert ceiling["srtf+clairvoyant"] == {**configs["clairvoyant"], "queue": "srtf"}


def test_a_small_peers_benchmark_runs_and_ranks(tmp_path, monkeypatch):
    trace = tmp_path / "t.csv"
    rows = ["submit_s,workers,duration_s"] + [f"{30 * i},{1 + i % 4},{900 + 40 * i}" for i in range(16)]
    trace.write_text("\n".join(rows) + "\n")
    cell = Cell("tiny-markov", "tiny", str(trace), "markov", {}, {"episode_median_s": 120.0})
    monkeypatch.setitem(online.CELLS, cell.name, cell)
    out = tmp_path / "peers"
    res = bench_peers(
        [cell.name], ["tiresias", "srtf"], [0, 1], out, decision_time_limit_s=0.1, ceiling=True, say=lambda m: None
    )
    c = res["cells"][cell.name]
    assert set(c["configs"]) == set(peer_configs(["tiresias", "srtf"], ceiling=True))
    for name, st in c["configs"].items():
        assert st["seeds"] == [0, 1], name
        m, lo, hi = st["avg_jct_s"]
        assert lo <= m <= hi and st["rho_p95"][0] >= st["rho_p50"][0] > 0
    assert c["configs"]["tiresias"]["preemptions"] is not None
    v = c["versus"]["tiresias"]
    assert v["loop_mean"][1] <= v["loop_mean"][0] <= v["loop_mean"][2]
    if v["removed"] is not None:  # a ratio of means over the seeds, with its interval
        assert v["removed"][1] <= v["removed"][0] <= v["removed"][2]

    text = (out / "peers.md").read_text()
    assert "## tiny-markov" in text and "| 1 |" in text and "Goals, each at its worst cell" in text
    assert "tiresias: its queue with our loop" in text
    # the ceiling: the same queue with the clairvoyant placement, its share beside ours
    assert "removed by the clairvoyant placement, same queue" in text and "| tiresias+clairvoyant |" in text
    assert "ceiling" in v and "removed_running" in v
    assert "share removed of its running part" in text
    assert json.loads((out / "peers.json").read_text()) == json.loads(json.dumps(res))


def test_the_removed_share_is_a_ratio_of_means_over_seeds():
    from placement.bench.peers import removed_share

    def runs(*jct: float) -> dict[int, dict[str, float]]:
        return {s: {"avg_jct_s": v} for s, v in enumerate(jct)}

    # seed 1's own inflation is nearly zero: a per-seed ratio would be wild, the ratio of means is not
    m, lo, hi = removed_share(runs(120.0, 100.1, 130.0), runs(110.0, 100.0, 115.0), runs(100.0, 100.0, 100.0))
    assert m == pytest.approx((116.7 - 108.3333) / 16.7, rel=1e-3) and lo <= m <= hi
    assert removed_share(runs(100.0), runs(90.0), {}) is None


def test_the_running_part_of_the_inflation_leaves_queueing_out():
    from placement.bench.peers import removed_share, running_s

    def runs(jct: float, queue: float) -> dict[int, dict[str, float]]:
        return {0: {"avg_jct_s": jct, "avg_queue_s": queue}}

    # stragglers add 20 s of running and 30 s of queueing; the loop removes the 20 s of running
    # and none of the queueing: 40% of the inflation, all of its running part
    own, loop, none = runs(150.0, 80.0), runs(130.0, 80.0), runs(100.0, 50.0)
    assert running_s(own[0]) == 70.0
    assert removed_share(own, loop, none)[0] == pytest.approx(0.4)
    assert removed_share(own, loop, none, metric=running_s)[0] == pytest.approx(1.0)

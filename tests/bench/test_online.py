"""The proactive loop's benchmark: its statistics are right, and a small benchmark runs end to
end, resumes, and reports every configuration and effect."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from placement.bench import online, online_report
from placement.bench.online import Cell, bench_online, bootstrap_mean, paired_change


def test_the_bootstrap_interval_holds_the_mean_and_is_seeded():
    x = [10.0, 12.0, 9.0, 15.0, 11.0]
    m, lo, hi = bootstrap_mean(x)
    assert m == pytest.approx(np.mean(x)) and lo < m < hi
    assert min(x) <= lo and hi <= max(x)
    assert bootstrap_mean(x, seed=3) == bootstrap_mean(x, seed=3)
    assert bootstrap_mean([5.0] * 4) == (5.0, 5.0, 5.0)
    # a wider spread gives a wider interval
    _, lo2, hi2 = bootstrap_mean([v * 3 - 2 * np.mean(x) for v in x])
    assert hi2 - lo2 > hi - lo


def test_paired_changes_pair_by_seed():
    new = {0: 90.0, 1: 110.0, 2: 45.0}
    base = {0: 100.0, 1: 100.0, 2: 50.0, 3: 70.0}
    m, lo, hi, n = paired_change(new, base)
    assert n == 3 and m == pytest.approx((-0.1 + 0.1 - 0.1) / 3)
    assert lo <= m <= hi


def test_a_small_benchmark_runs_resumes_and_reports(tmp_path, monkeypatch):
    trace = tmp_path / "t.csv"
    rows = ["submit_s,workers,duration_s"] + [f"{60 * i},{1 + i % 4},{600 + 50 * i}" for i in range(14)]
    trace.write_text("\n".join(rows) + "\n")
    cell = Cell("tiny-markov", "tiny", str(trace), "markov", {}, {"episode_median_s": 120.0})
    monkeypatch.setitem(online.CELLS, cell.name, cell)
    configs = ["consolidate", "consolidate-none", "defrag", "defrag-none", "oracle"]
    out = tmp_path / "bench"
    res = bench_online([cell.name], configs, [0, 1], out, decision_time_limit_s=0.2, say=lambda m: None)
    c = res["cells"][cell.name]
    assert set(c["configs"]) == set(configs)
    for st in c["configs"].values():
        assert st["seeds"] == [0, 1]
        m, lo, hi = st["avg_jct_s"]
        assert lo <= m <= hi and m > 0
    effects = {(e["new"], e["base"], e["metric"]) for e in c["effects"]}
    assert ("defrag", "consolidate", "avg_jct_s") in effects
    assert c["consolidation_inflation"][0] >= -1e-9  # slowdowns never make consolidation faster here
    text = (out / "online.md").read_text()
    assert "## tiny-markov" in text and "| defrag | 2 |" in text
    assert json.loads((out / "online.json").read_text()) == json.loads(json.dumps(res))
    assert (out / "online.png").stat().st_size > 10_000
    # the share of oblivious re-planning's inflation the oracle removes, per seed
    removed = c["inflation_removed"]["oracle"]
    assert removed[1] <= removed[0] <= removed[2] and 0.0 < removed[0] < 1.0
    assert "inflation with re-planning" in text
    # a second run resumes: every configuration is already in its folder
    said: list[str] = []
    bench_online([cell.name], configs, [0, 1], out, decision_time_limit_s=0.2, say=said.append)
    assert all("(2 already in" in m for m in said if "configurations" in m), said


def test_extra_fields_are_checked_and_recorded(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="not SimConfig fields: bogus"):
        bench_online(["cluster04-pod256-markov"], ["consolidate"], [0], tmp_path, extra={"bogus": 1})


def test_the_generated_clusters_are_written_once(tmp_path):
    path = online.cluster_file("hetero256", tmp_path)
    first = Path(path).read_text()
    assert online.cluster_file("hetero256", tmp_path) == path and Path(path).read_text() == first
    assert online.cluster_file("pod256", tmp_path) == "pod256"
    from placement.formats import load_instance

    inst = load_instance(path)
    assert {s.gpu_type for s in inst.servers} == {"A100", "V100"} and sum(s.gpus for s in inst.servers) == 256


def _grid_result() -> dict:
    """Two cells; ``cand`` is 10% slower than consolidation in ``grid-b`` (its worst cell)."""

    def per(values: dict[str, dict[int, float]], q1: dict[str, float]) -> dict:
        return {
            c: {s: {"avg_jct_s": v, "p99_jct_s": 2 * v, "avg_queue_w1_s": q1[c], "jobs": 10} for s, v in by.items()}
            for c, by in values.items()
        }

    a = per(
        {
            "consolidate": {0: 100.0, 1: 110.0},
            "consolidate-none": {0: 80.0, 1: 90.0},
            "clairvoyant": {0: 82.0, 1: 92.0},
            "cand": {0: 90.0, 1: 100.0},
        },
        {"consolidate": 10.0, "consolidate-none": 5.0, "clairvoyant": 5.0, "cand": 8.0},
    )
    b = per(
        {
            "consolidate": {0: 100.0, 1: 100.0},
            "consolidate-none": {0: 95.0, 1: 95.0},
            "clairvoyant": {0: 99.0, 1: 99.0},
            "cand": {0: 110.0, 1: 110.0},
        },
        {"consolidate": 10.0, "consolidate-none": 5.0, "clairvoyant": 5.0, "cand": 15.0},
    )
    return {"cells": {"grid-a": online._cell_summary(a), "grid-b": online._cell_summary(b)}}


def test_the_grid_table_names_each_candidates_worst_cell():
    res = _grid_result()
    a = res["cells"]["grid-a"]
    # cand removes half of consolidation's inflation in grid-a (paired, per seed)
    assert a["consolidation_inflation_removed"]["cand"][0] == pytest.approx(0.5)
    assert a["vs_consolidation"]["cand"]["avg_jct_s"][0] == pytest.approx(((90 / 100) + (100 / 110)) / 2 - 1)
    text = online_report.grid_table(res)
    assert text.count("\n| grid-") == 2
    (worst,) = [line for line in text.splitlines() if line.startswith("- `cand`")]
    assert "mean JCT / consolidation's, upper end of the interval +10.0% (grid-b)" in worst
    assert "1-GPU jobs' mean queueing / consolidation's +50.0% (grid-b)" in worst
    # clairvoyant removes >= 30% only in grid-a (90%), where cand removes 50%: 56% of it
    assert "its removal over clairvoyant's (where that is >= 30%) 56% (grid-a)" in worst


def test_the_grid_spans_loads_shapes_regimes_and_both_traces(tmp_path):
    from placement.formats import load_instance
    from placement.instances import load_bundled
    from placement.problem.topology import cluster_of

    cells = [online.CELLS[c] for c in online.GRID]
    assert {c.trace_options.get("load", 1.0) for c in cells} >= {0.5, 1.0, 2.0}
    assert {c.trace for c in cells} == {"elasticflow-cluster03", "elasticflow-cluster04"}
    gpus, tiers = set(), set()
    for name in {c.cluster for c in cells}:
        path = online.cluster_file(name, tmp_path)
        inst = load_bundled(name) if path == name else load_instance(path)
        gpus.add(sum(s.gpus for s in inst.servers))
        tiers.add(len(cluster_of(inst).domains))  # one switch's servers, or racks under a spine
    assert {128, 256, 1024} <= gpus and 1 in tiers and max(tiers) > 1
    # calm, hot and heavy-tailed regimes
    assert {"--regime calm", "--regime heavy-tail"} <= {
        f"--regime {w}" for g in online.GENERATED.values() for w in ("calm", "heavy-tail") if f"--regime {w}" in g
    }


def test_the_measured_grid_repeats_the_grids_windows_loads_and_shapes_under_the_measured_law(tmp_path):
    markov = {online.CELLS[c].cluster for c in online.GRID} - {"calm256"}
    markov = {c.split("-draw")[0] for c in markov}
    cells = [online.CELLS[c] for c in online.GRID_MEASURED]
    assert len(cells) == 10 and {c.dynamics for c in cells} == {"measured"}
    assert {c.cluster for c in cells} == markov
    for c in cells:
        twin = online.CELLS[c.name.removesuffix("-measured")]
        assert (twin.dynamics, twin.cluster, twin.trace, twin.trace_options) == (
            "markov",
            c.cluster,
            c.trace,
            c.trace_options,
        )
    assert not set(online.GRID) & set(online.GRID_MEASURED)


def test_the_wide_jobs_cell_runs_greyhounds_shape(tmp_path):
    from placement.formats import load_instance
    from placement.problem.topology import cluster_of

    cell = online.CELLS["large-c04d20-widest-probe4096-measured"]
    inst = load_instance(online.cluster_file(cell.cluster, tmp_path))
    assert sum(s.gpus for s in inst.servers) == 4096 and len(cluster_of(inst).domains) > 3
    assert cell.trace_options["min_workers"] == 16 and cell.trace_options["widen"] == 16


def test_the_grid_reports_each_candidates_own_inflation_and_the_replay_reference(tmp_path):
    """Beside each removal share, the loop's own straggler inflation (itself minus its none
    twin, paired) against consolidation's; and the clairvoyant on the loop's starts."""

    def per(values):
        return {
            c: {s: {"avg_jct_s": v, "p99_jct_s": v, "avg_queue_w1_s": 1.0, "jobs": 10} for s, v in by.items()}
            for c, by in values.items()
        }

    cell = online._cell_summary(
        per(
            {
                "consolidate": {0: 110.0, 1: 120.0},
                "consolidate-none": {0: 100.0, 1: 100.0},
                "cand": {0: 105.0, 1: 99.0},
                "cand-none": {0: 100.0, 1: 90.0},
                "clairvoyant-replay": {0: 104.0, 1: 98.0},
            }
        )
    )
    assert cell["own_inflation"]["cand"][0] == pytest.approx((0.05 + 0.10) / 2)
    assert cell["own_inflation"]["consolidate"][0] == pytest.approx((0.10 + 0.20) / 2)
    text = online_report.grid_table({"cells": {"grid-x": cell}})
    assert "| cand: mean | p99 | removed | own inflation |" in text and "cand-none: mean" not in text
    assert "clairvoyant-replay: mean" not in text  # a reference, not a candidate
    (worst,) = [line for line in text.splitlines() if line.startswith("- `cand`")]
    assert "own straggler inflation over consolidation's -7.5% (grid-x)" in worst


def test_a_replay_configuration_replays_its_reference_runs_starts_seed_by_seed(tmp_path):
    cell = online.CELLS["grid-c04d28-pod256"]
    runs = online._runs(
        cell, online.CONFIGS["clairvoyant-replay"], [0, 3], {}, tmp_path / "cell" / "clairvoyant-replay"
    )
    assert [r.config["queue"] for r in runs] == ["replay", "replay"] and "replay_of" not in runs[0].config
    assert runs[0].config["replay_starts"].endswith("/cell/proactive/jobs/auto-estimated-markov-seed0.csv")
    assert runs[1].config["replay_starts"].endswith("seed3.csv")
    with pytest.raises(ValueError, match="proactive"):
        online.run_cells(["grid-c04d28-pod256"], {"r": online.CONFIGS["clairvoyant-replay"]}, [0], {}, tmp_path)

"""PAL's setup benchmark: a small one runs end to end on a tiny Sia-format workload with
synthetic GPU profiles, and its geomean ratios are the workloads' mean ratios."""

from __future__ import annotations

import json
import math

import pytest

from placement.bench.pal import (
    CONFIGS,
    PENALTY,
    PROFILES,
    SITES,
    bench_pal,
    geomean_ratio,
    own_figures,
    pal_cluster,
    setup,
    site_folder,
)


def test_the_geomean_ratio_is_over_workloads_of_the_means_over_seeds():
    per = {
        "1": {"pal": {0: 80.0, 1: 100.0}, "packed": {0: 100.0, 1: 100.0}},
        "2": {"pal": {0: 50.0, 1: 50.0}, "packed": {0: 100.0, 1: 100.0}},
    }
    m, lo, hi = geomean_ratio(per, "pal", "packed")
    assert m == pytest.approx(math.sqrt(0.9 * 0.5))
    # resampling seeds: seed 0 alone gives sqrt(0.8 * 0.5), seed 1 alone sqrt(1.0 * 0.5)
    assert math.sqrt(0.4) - 1e-12 <= lo < m < hi <= math.sqrt(0.5) + 1e-12
    assert lo == pytest.approx(math.sqrt(0.4)) and hi == pytest.approx(math.sqrt(0.5))
    assert geomean_ratio(per, "auto-known", "pal") is None


def test_pal_own_simulator_figures_are_read_by_penalty_workload_and_our_names():
    own = {
        "runs_default_penalty_1_7": [
            {"workload": "workload-3", "policy": "PAL", "locality_penalty": 1.7, "mean_jct_s": 10.0},
            {"workload": "workload-3", "policy": "Default-Packed-NS", "locality_penalty": 1.7, "mean_jct_s": 20.0},
            {"workload": "workload-3", "policy": "Default-Random-S", "locality_penalty": 1.7, "mean_jct_s": 30.0},
        ],
        "locality_penalty_sweep": {
            "runs": [{"workload": "workload-3", "policy": "PMFirst", "locality_penalty": 2.5, "mean_jct_s": 5.0}]
        },
    }
    assert own_figures(own) == {"1.7": {"3": {"pal": 10.0, "packed": 20.0}}, "2.5": {"3": {"pm_first": 5.0}}}


def test_a_small_pal_benchmark_runs_and_reports(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    jobs = ["job_id,num_gpus,submit_time,duration,model"]
    models = ("vgg19", "BERT", "DCGAN", "resnet50")
    jobs += [f"{i},{(1, 2, 4, 6)[i % 4]},{40 * i},{600 + 100 * i},{models[i % 4]}" for i in range(10)]
    (data / "sia-philly-workload-1.csv").write_text("\n".join(jobs) + "\n")
    for k, name in enumerate(sorted(set(PROFILES.values()))):
        rows = [f"x{g // 4},{g % 4},{name},{1.0 + 0.02 * ((g * (k + 3)) % 7)}" for g in range(64)]
        (data / f"{name}-longhorn-agg.csv").write_text("server,gpu,class,perf\n" + "\n".join(rows) + "\n")
    out = tmp_path / "pal"
    small = {
        "workloads": [1],
        "configs": ["packed", "pal", "auto-known", "auto-estimated", "no-variability"],
        "seeds": [0, 1],
        "penalties": [1.7, 3.0],
        "sweep_seeds": [0],
        "say": lambda m: None,
    }
    res = bench_pal(data, out, **small)
    assert set(res["penalties"]) == {"1.7", "3"}
    # learning the factors online: the learnt ones rank the GPUs the jobs ran on
    assert set(res["rank_corr"]) == {"auto-estimated"}
    assert -1.0 <= res["rank_corr"]["auto-estimated"]["gpu_rank_corr"][0] <= 1.0
    assert res["penalties"]["3"]["workloads"]["1"]["pal"]["seeds"] == [0]  # the sweep's seeds
    # the uniform GPUs' run has no factors, and its layout seed changes nothing
    nov = res["penalties"]["1.7"]["workloads"]["1"]["no-variability"]["mean"]
    assert nov[1] == pytest.approx(nov[2])
    at = res["penalties"]["1.7"]
    assert set(at["workloads"]["1"]) == {"packed", "pal", "auto-known", "auto-estimated", "no-variability"}
    assert set(res["penalties"]["3"]["workloads"]["1"]) == {"packed", "pal"}  # the sweep: no auto
    # one workload: the geomean ratio is the ratio of the means over seeds
    runs = {}
    for c in ("packed", "pal"):
        rows = [json.loads(x) for x in (out / "workload-1" / "penalty1.7" / c / "runs.jsonl").read_text().splitlines()]
        assert {r["comm"] for r in rows} == {"penalty:1.7"} and all(r["resettle"] for r in rows)
        runs[c] = sum(r["avg_jct_s"] for r in rows) / len(rows)
    assert at["geomean"]["pal/packed"][0] == pytest.approx(runs["pal"] / runs["packed"])
    report = (out / "pal.md").read_text()
    assert "## Locality penalty 1.7" in report and "pal/packed" in report and "auto-known/pal" in report
    assert "Spearman correlation of the learnt per-GPU factors" in report
    # resumed: a second call runs nothing again and reports the same
    again = bench_pal(data, out, **small)
    assert json.dumps(bench_pal(data, out, **small, report_only=True)["penalties"]) == json.dumps(res["penalties"])
    assert json.dumps(again["penalties"]) == json.dumps(res["penalties"])


def test_pal_cluster_is_papers_shape():
    c = pal_cluster()
    assert [s.gpus for s in c.servers] == [4] * 16 and {s.gpu_type for s in c.servers} == {"V100"}
    assert set(CONFIGS) == {"packed", "pm_first", "pal", "auto-known", "auto-estimated", "no-variability"}
    assert CONFIGS["no-variability"]["variability"] == ()


def test_other_sites_draw_from_their_bundled_profiles(tmp_path):
    """Frontera's and LS6's profiles (PAL's repository) ship with the package; a site's runs draw
    every class's factors from its files, and Frontera's fleet is tamer than Longhorn's."""
    import numpy as np

    from placement.estimate.gpu_profiles import read_gpu_profiles

    for site in ("frontera", "ls6"):
        folder = site_folder(site, tmp_path)
        variability = setup(folder, PENALTY, site)["variability"]
        assert [v.split("=", 1)[0] for v in variability] == list(PROFILES)
        for v in variability:
            assert v.split("=", 1)[1].startswith(str(folder)) and v.endswith(SITES[site][v[0]])
            assert (folder / SITES[site][v[0]]).is_file()
    resnet = read_gpu_profiles(site_folder("frontera", tmp_path) / SITES["frontera"]["A"])[0]
    assert np.percentile(resnet.run_factors, 95) < 1.1 and len(resnet.factors) > 250
    data = tmp_path / "data"
    data.mkdir()
    jobs = ["job_id,num_gpus,submit_time,duration,model"] + [f"{i},{1 + i % 4},{30 * i},800,resnet50" for i in range(6)]
    (data / "sia-philly-workload-1.csv").write_text("\n".join(jobs) + "\n")
    out = tmp_path / "out"
    res = bench_pal(data, out, site="ls6", workloads=[1], configs=["packed"], seeds=[0], penalties=[1.7], say=print)
    assert res["site"] == "ls6" and "own" not in res and not res["failed"]
    row = json.loads((out / "workload-1" / "penalty1.7" / "packed" / "runs.jsonl").read_text().splitlines()[0])
    assert all(v.endswith("resnet-ls6-agg.csv") for v in row["config"]["variability"])
    assert "ls6's profiles" in (out / "pal.md").read_text()
    with pytest.raises(ValueError, match="unknown site"):
        bench_pal(data, out, site="summit", workloads=[1], configs=["packed"], seeds=[0], penalties=[1.7])


def test_another_trace_runs_on_the_class_free_profile(tmp_path):
    """``trace=``: one workload from any trace the simulator reads (here ElasticFlow's format),
    every job's GPUs drawn from Longhorn's sgemm profile whatever its class."""
    data = tmp_path / "data"
    data.mkdir()
    rows = ["job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"]
    rows += [f"j{i},{100 * i},{1000 + 10 * i},resnet50,999999,32,{(1, 2, 4)[i % 3]},{600 + 60 * i}" for i in range(6)]
    trace = tmp_path / "ef.csv"
    trace.write_text("\n".join(rows) + "\n")
    prof = [f"x{g // 4},{g % 4},sgemm,{1.0 + 0.03 * (g % 5)}" for g in range(64)]
    (data / "sgemm-longhorn-agg.csv").write_text("server,gpu,class,perf\n" + "\n".join(prof) + "\n")
    out = tmp_path / "out"
    res = bench_pal(
        data, out, trace=trace, trace_options={}, configs=["packed", "pal"], seeds=[0], penalties=[1.7], say=print
    )
    assert set(res["penalties"]["1.7"]["workloads"]) == {"trace"} and not res["failed"]
    row = json.loads((out / "workload-trace" / "penalty1.7" / "pal" / "runs.jsonl").read_text().splitlines()[0])
    assert [v.rsplit("/", 1)[-1] for v in row["config"]["variability"]] == ["sgemm-longhorn-agg.csv"]
    assert res["penalties"]["1.7"]["geomean"]["pal/packed"] is not None

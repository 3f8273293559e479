"""Per-GPU factors from profiles: PAL's aggregated CSVs and the plain format, the direction of
``perf``, the seeded layout, bad rows by line, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from support.paths import SHARED_DATA

import placement
from placement.cli.main import cli
from placement.errors import InvalidInputError
from placement.estimate.gpu_profiles import apply_gpu_profiles, read_gpu_profiles

PAL = SHARED_DATA / "pal-variability"
needs_pal = pytest.mark.skipif(not (PAL / "sgemm-longhorn-agg.csv").exists(), reason="PAL's profiles are not here")


@needs_pal
def test_longhorn_sgemm_gives_the_published_spread():
    """PAL (SC'24): each V100's median sgemm time over the fleet median spans 0.952-1.203, p5-p95
    0.974-1.027; a GPU's own runs stay close to its median; perf falls as the clock rises: a time."""
    (p,) = read_gpu_profiles(PAL / "sgemm-longhorn-agg.csv")
    v = np.array(list(p.factors.values()))
    assert len(v) == 392 and p.perf_is == "time" and "freq" in p.why
    assert v.min() == pytest.approx(0.952, abs=5e-4) and v.max() == pytest.approx(1.203, abs=5e-4)
    assert np.percentile(v, 5) == pytest.approx(0.974, abs=5e-4) and np.percentile(v, 95) == pytest.approx(
        1.027, abs=5e-4
    )
    assert p.own_spread < 1.1
    # read the other way round, the slow GPU becomes the fast one
    (q,) = read_gpu_profiles(PAL / "sgemm-longhorn-agg.csv", perf_is="speed")
    worst = max(p.factors, key=lambda k: p.factors[k])
    assert q.factors[worst] == min(q.factors.values())


@needs_pal
def test_resnet_is_read_as_a_time_by_its_iteration_duration_and_laid_out_by_seed():
    (p,) = read_gpu_profiles(PAL / "resnet-longhorn-agg.csv")
    assert p.perf_is == "time" and "mean_iter_dur" in p.why
    inst = placement.load_bundled("demo")
    a, said = apply_gpu_profiles(inst, [p], seed=1)
    b, _ = apply_gpu_profiles(inst, [p], seed=1)
    c, _ = apply_gpu_profiles(inst, [p], seed=2)
    assert a == b and a != c and "seed 1" in said[0]
    laid = [f for s in a.servers for f in s.gpu_factors(None)]
    assert len(laid) == sum(s.gpus for s in inst.servers) and set(laid) <= set(p.factors.values())
    # PAL's nodes hold 4 GPUs: a node's GPUs stay together on a demo server (8 GPUs)
    by_node: dict[str, list[float]] = {}
    for k, f in p.factors.items():
        by_node.setdefault(str(p.node[k]), []).append(f)
    first = a.servers[0].gpu_factors(None)[:4]
    assert any(sorted(first) == sorted(v) for v in by_node.values())


def _plain(tmp_path, rows, name="prof.csv"):
    path = tmp_path / name
    path.write_text("server,gpu,class,perf\n" + "".join(f"{r}\n" for r in rows))
    return path


def test_the_plain_format_puts_each_gpu_where_it_is_by_class(tmp_path):
    inst = placement.load_bundled("tiny")
    s0, s1 = inst.servers[0].id, inst.servers[1].id
    rows = [
        f"{s0},0,resnet,10",
        f"{s0},0,resnet,12",
        f"{s0},1,resnet,10",
        f"{s1},0,resnet,10",
        f"{s0},1,bert,5",
        f"{s0},0,bert,6",
    ]
    profs = read_gpu_profiles(_plain(tmp_path, rows))
    assert {p.app_class for p in profs} == {"resnet", "bert"}
    out, said = apply_gpu_profiles(inst, profs)
    assert all("on the servers the profile names" in s for s in said)
    srv = out.server_by_id[s0]
    assert srv.gpu_factors("resnet")[:2] == (pytest.approx(1.1), 1.0)  # median 11 over the fleet's 10
    assert srv.gpu_factors("bert")[:2] == (pytest.approx(6 / 5.5), pytest.approx(5 / 5.5))
    assert srv.gpu_factors("other") == (1.0,) * srv.gpus  # no class listed for it, no '*': 1


def test_bad_rows_are_refused_by_line_all_at_once(tmp_path):
    path = _plain(tmp_path, ["s0,0,resnet,10", "s0,x,resnet,10", "s0,1,resnet,-2", "s0,1,,3", "s0,2,resnet,nan"])
    with pytest.raises(InvalidInputError) as e:
        read_gpu_profiles(path)
    text = str(e.value)
    for line in (3, 4, 5, 6):
        assert f"prof.csv row {line}" in text
    bad = tmp_path / "other.csv"
    bad.write_text("host,value\na,1\n")
    with pytest.raises(InvalidInputError, match="header has"):
        read_gpu_profiles(bad)


def test_the_cli_writes_factors_and_refuses_bad_profiles_with_exit_2(tmp_path):
    inst = placement.load_bundled("tiny")
    s0 = inst.servers[0].id
    good = _plain(tmp_path, [f"{s0},0,a,10", f"{s0},1,a,13", f"{s0},2,a,10"])
    out = tmp_path / "inst.json"
    r = CliRunner().invoke(cli, ["estimate", "tiny", "--gpu-profiles", str(good), "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    node = next(n for n in doc["topology"]["nodes"] if n["id"] == s0)
    assert node["gpu_slowdowns"][:3] == [1.0, 1.3, 1.0]
    sol = placement.solve(placement.load_instance(out), "brute_force" if len(inst.jobs) <= 3 else "greedy")
    assert sol.status.has_placement
    bad = _plain(tmp_path, [f"{s0},0,a,zero"], name="bad.csv")
    out2 = tmp_path / "never.json"
    r = CliRunner().invoke(cli, ["estimate", "tiny", "--gpu-profiles", str(bad), "-o", str(out2)])
    assert r.exit_code == 2 and "bad.csv row 2" in r.output and not out2.exists()


def test_runs_draws_lay_each_gpu_a_seeded_run_as_pals_simulator_does(tmp_path):
    """``draw="runs"``: every GPU of the cluster a draw from the class's runs over their median, so
    an outlier run (here 3x) can become a GPU's factor; the same seed, the same layout."""
    inst = placement.load_bundled("demo")
    rows = [f"x{k},0,a,{v}" for k, v in enumerate([10, 10, 10, 10, 30, 10, 11, 9])]
    (prof,) = read_gpu_profiles(_plain(tmp_path, rows))
    assert sorted(prof.run_factors) == pytest.approx(sorted(v / 10 for v in [10, 10, 10, 10, 30, 10, 11, 9]))
    a, said = apply_gpu_profiles(inst, [prof], seed=4, draw="runs")
    b, _ = apply_gpu_profiles(inst, [prof], seed=4, draw="runs")
    laid = [f for s in a.servers for f in s.gpu_factors(None)]
    assert a == b and "draw from 8 runs" in said[0] and 3.0 in laid and set(laid) <= set(prof.run_factors)
    with pytest.raises(InvalidInputError, match="draw must be"):
        apply_gpu_profiles(inst, [prof], draw="both")


def test_fronteras_pagerank_names_its_class_in_model(tmp_path):
    """Frontera's PageRank profile (PAL's repository) has ``model`` where the others have ``exp``."""
    p = tmp_path / "frontera-pagerank-agg.csv"
    rows = ["cabinet,device,model,node,perf_avg,perf,run,uuid"]
    rows += [f"c198,{d},pagerank,41,1.0,{100 + d},{r},GPU-{d}" for d in range(4) for r in range(2)]
    p.write_text("\n".join(rows) + "\n")
    (got,) = read_gpu_profiles(p)
    assert got.app_class == "pagerank" and len(got.factors) == 4

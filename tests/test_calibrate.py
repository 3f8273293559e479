"""``placement calibrate``: fitted compute and all-reduce terms from profiled step times, the
forms compared on rows they were not fitted on, and an instance whose evaluator reproduces the
fit (the terms are the model's, everywhere)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from support.paths import SHARED_DATA

from placement.calibrate import (
    DEFAULT_FORM,
    FORMS,
    ProfileError,
    calibrate,
    fit,
    predict,
    read_profiles,
    relative_errors,
)
from placement.cli.main import cli
from placement.evaluation import evaluate
from placement.formats import load_instance

POLLUX = SHARED_DATA / "pollux-placements"
needs_pollux = pytest.mark.skipif(not (POLLUX / "ncf.csv").is_file(), reason=f"needs Pollux's profiles in {POLLUX}")

TRUE = {"compute": {16: 40.0, 32: 70.0}, "g_intra": 2.0, "g_inter": 30.0, "gamma": -9.0}


def synthetic_csv(path, noise: float = 0.0, seed: int = 0) -> None:
    """Step times of a known job at every placement of 1-4 GPUs on 1-4 servers."""
    rng = np.random.default_rng(seed)
    rows = ["placement,local_bsz,step_time"]
    pats = [(a,) for a in range(1, 5)] + [(a, b) for a in range(1, 5) for b in range(1, a + 1)]
    pats += [(a, b, c) for a in (2, 4) for b in (1, 2) for c in (1, 2)] + [(4, 4, 4, 4), (2, 2, 1, 1), (3, 3, 3, 1)]
    for pat in pats:
        W, k = sum(pat), len(pat)
        ring = 2 * (W - 1) / W if W > 1 else 0.0
        comm = ring * (TRUE["g_intra"] if k == 1 else TRUE["g_inter"]) + (
            TRUE["gamma"] * 2 * (k - 1) / k if k > 1 else 0
        )
        for b, c in TRUE["compute"].items():
            t = (c + comm) * (1 + noise * rng.standard_normal())
            rows.append(f"{''.join(map(str, pat))},{b},{t / 1000.0}")
    path.write_text("\n".join(rows) + "\n")


def test_the_hierarchical_form_recovers_a_known_job_and_the_instance_reproduces_it(tmp_path):
    synthetic_csv(tmp_path / "p.csv")
    p = read_profiles(tmp_path / "p.csv")
    f = fit(p, "ring+gamma")
    assert f.compute_ms == pytest.approx(TRUE["compute"], rel=1e-9)
    assert (f.ring_intra_ms, f.ring_inter_ms, f.gamma_ms) == pytest.approx(
        (TRUE["g_intra"], TRUE["g_inter"], TRUE["gamma"]), rel=1e-9
    )
    assert relative_errors(f, p).max() < 1e-9
    assert relative_errors(fit(p, "ring"), p).max() > 0.02  # the plain ring cannot
    cal = calibrate(p, model="resnet50", gpus_per_server=4)
    assert cal.form == "ring+gamma" and cal.errors["ring+gamma"] < 1e-9 < cal.errors["ring"]
    inst = cal.instance
    assert len(inst.servers) == 4 and [j.id for j in inst.jobs] == ["resnet50-b16", "resnet50-b32"]
    # every profiled placement, evaluated on the written instance, is the fit's prediction
    want = predict(cal.fit, p)
    for i, (pat, b) in enumerate(zip(p.gpus, p.batch)):
        job = inst.job_by_id[f"resnet50-b{b}"]
        one = inst.replace(jobs=(job.__class__(job.id, sum(pat), job.compute_ms, job.gradient_mb),))
        got = evaluate(one, {job.id: {f"n{s}": k for s, k in enumerate(pat)}}).jobs[job.id].expected_iteration_ms
        assert got == pytest.approx(want[i], rel=1e-9), pat


def test_forms_are_judged_on_server_counts_they_were_not_fitted_on(tmp_path):
    synthetic_csv(tmp_path / "p.csv", noise=0.01)
    p = read_profiles(tmp_path / "p.csv")
    cal = calibrate(p, model="m", gpus_per_server=4)
    assert set(cal.errors) == set(FORMS) and cal.form == min(cal.errors, key=lambda f: cal.errors[f])
    assert any("not in the catalogue" in n for n in cal.notes)
    # with one count of two or more servers there is nothing to hold out: the default form
    near = calibrate(p.subset(p.servers <= 2), model="m", gpus_per_server=4)
    assert near.form == DEFAULT_FORM and math.isnan(near.errors["ring"])


@needs_pollux
@pytest.mark.parametrize("name", ["cifar10", "deepspeech2", "imagenet", "ncf"])
def test_on_pollux_the_default_form_predicts_wider_placements_better_than_the_ring(name):
    p = read_profiles(POLLUX / f"{name}.csv")
    near, far = p.subset(p.servers <= 2), p.subset(p.servers >= 3)
    ring = np.median(relative_errors(fit(near, "ring"), far))
    ours = np.median(relative_errors(fit(near, DEFAULT_FORM), far))
    assert ours <= 0.75 * ring
    rng = np.random.default_rng(0)
    a = np.zeros(len(p.step_ms), dtype=bool)
    a[rng.permutation(len(a))[: len(a) // 2]] = True
    assert np.median(relative_errors(fit(p.subset(a), DEFAULT_FORM), p.subset(~a))) <= 0.10


def test_the_cli_writes_the_fit_and_refuses_bad_rows_with_exit_2(tmp_path):
    synthetic_csv(tmp_path / "p.csv")
    out = tmp_path / "fitted.json"
    r = CliRunner().invoke(
        cli, ["calibrate", str(tmp_path / "p.csv"), "--model", "resnet50", "--gpus-per-server", "4", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "ring+gamma" in r.output and "chosen" in r.output
    inst = load_instance(out)
    assert inst.comm_terms and inst.comm_terms[0].gamma_ms == pytest.approx(TRUE["gamma"], rel=1e-9)
    bad = tmp_path / "bad.csv"
    bad.write_text("placement,local_bsz,step_time\n12,16,0.05\n1x,16,0.05\n2,0,0.05\n3,16,-1\n")
    out2 = tmp_path / "out2.json"
    r = CliRunner().invoke(cli, ["calibrate", str(bad), "--model", "m", "--gpus-per-server", "4", "-o", str(out2)])
    assert r.exit_code == 2 and not out2.exists()
    assert all(f"line {k}" in r.output for k in (3, 4, 5)) and "line 2" not in r.output
    with pytest.raises(ProfileError, match="missing column"):
        (tmp_path / "nocol.csv").write_text("placement,step_time\n1,0.1\n")
        read_profiles(tmp_path / "nocol.csv")
    r = CliRunner().invoke(
        cli, ["calibrate", str(tmp_path / "p.csv"), "--model", "m", "--gpus-per-server", "2", "-o", str(out2)]
    )
    assert r.exit_code == 2 and "4 GPUs on one server" in r.output


def test_the_calibration_benchmark_reports_every_job_and_form(tmp_path):
    from placement.bench.calibrate import bench_calibrate

    for i, name in enumerate(("cifar10", "deepspeech2", "imagenet", "ncf")):
        synthetic_csv(tmp_path / f"{name}.csv", noise=0.01, seed=i)
    bench_calibrate(tmp_path, tmp_path / "out", seeds=2)
    text = (tmp_path / "out" / "calibrate.md").read_text()
    rows = [r for r in text.splitlines() if r.startswith("| ") and "%" in r]
    assert len(rows) == 4 * len(FORMS)
    # the known job's form extrapolates, the ring does not
    gamma = next(r for r in rows if r.startswith("| ncf |") and "| ring+gamma |" in r)
    assert float(gamma.split("|")[5]) < 0.5


def test_a_trace_job_of_a_profiled_model_runs_its_fitted_compute_and_its_duration(tmp_path):
    """The simulator's use of profiles: on the calibrated cluster, a trace job of the profiled
    model takes the median batch's fitted compute and gradient and the iterations that make its
    reference placement run its measured duration; a job of another model keeps the reference
    rule (its compute solved from the duration)."""
    from placement.simulation import simulate
    from placement.simulation.workload import TraceJob, Workload

    synthetic_csv(tmp_path / "p.csv")
    fitted = tmp_path / "fitted.json"
    r = CliRunner().invoke(
        cli,
        [
            "calibrate",
            str(tmp_path / "p.csv"),
            "--model",
            "resnet50",
            "--gpus-per-server",
            "4",
            "--servers",
            "4",
            "-o",
            str(fitted),
        ],
    )
    assert r.exit_code == 0, r.output
    cluster = load_instance(fitted)
    jobs = (
        TraceJob("p", 0.0, 8, 1, 1.0, 98.0, model="resnet50", duration_s=600.0),
        TraceJob("o", 10_000.0, 8, 1000, 1.0, 98.0, model="vgg16", duration_s=600.0),
    )
    res = simulate(
        cluster,
        Workload(jobs, "two", {}),
        method="consolidate",
        knowledge="oblivious",
        dynamics="none",
        profiles=str(fitted),
    )
    assert res.summary["jobs_profiled"] == 1
    rows = {row["job"]: row for row in res.jobs}
    # 8 GPUs on two whole servers: compute 40 ms (b16, the median of 16 and 32 is the lower) plus
    # the fitted all-reduce; the iterations are the duration over that time, rounded
    W, k = 8, 2
    step = TRUE["compute"][16] + 2 * (W - 1) / W * TRUE["g_inter"] + TRUE["gamma"] * 2 * (k - 1) / k
    assert rows["p"]["iterations"] == round(600_000.0 / step)
    assert rows["p"]["run_s"] == pytest.approx(rows["p"]["iterations"] * step / 1000.0, rel=1e-9)
    assert rows["o"]["run_s"] == pytest.approx(600.0, rel=1e-9)  # the reference rule

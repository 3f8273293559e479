import glob
import math

import numpy as np
import pytest
from click.testing import CliRunner
from support.paths import SHARED_DATA

import placement
from placement.cli.main import cli
from placement.estimate import (
    LogData,
    TelemetryError,
    apply_estimates,
    backtest_pai,
    contention_overrides,
    estimate_from_logs,
    forecast,
    pai_instance,
    product,
    read_demands,
    read_iteration_log,
    read_pai,
    read_telemetry,
)
from placement.model import Job, Slowdown

DATA = SHARED_DATA
PAI = sorted(glob.glob(str(DATA / "alibaba-pai-minibatch" / "job_*_norm.csv")))
needs_pai = pytest.mark.skipif(
    not PAI,
    reason=f"needs the Alibaba PAI per-worker files (cluster-trace-gpu-v2020) in {DATA}/alibaba-pai-minibatch; "
    "set PLACEMENT_DATA to the folder holding them",
)


def synthetic_log(iters=400, late_straggler="s1", early_straggler="s2", seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(iters):
        for _w, s in enumerate(["s0", "s1", "s2", "s3", "s4"]):
            d = 100 * (1 + 0.01 * rng.random())
            if s == late_straggler and t >= iters // 2:
                d *= 2.0
            if s == early_straggler and t < iters // 2:
                d *= 2.0
            rows.append(("job", s, t, d))
    j, s, t, d = zip(*rows)
    return LogData(np.array(j), np.array(s), np.array(t), np.array(d, dtype=float))


def test_recency_trusts_a_recovered_server_again_and_shrinks_to_the_fleet():
    est, fleet = estimate_from_logs(synthetic_log(), half_life=50, servers=["unseen"])
    assert est["s1"].straggle_probability > 0.8  # straggling now
    assert est["s2"].straggle_probability < 0.1  # straggled long ago, recovered
    assert est["s0"].straggle_probability < 0.1
    assert est["s1"].mean > 1.8 and est["s0"].mean < 1.05
    assert est["unseen"].samples == 0 and est["unseen"].slowdown == fleet
    # with no recency weighting the two would look alike
    flat, _ = estimate_from_logs(synthetic_log(), half_life=1e9)
    assert abs(flat["s1"].straggle_probability - flat["s2"].straggle_probability) < 0.05


def test_few_observations_are_shrunk_towards_the_fleet_rate():
    log = synthetic_log(iters=6, late_straggler="s1", early_straggler="none")
    weak, _ = estimate_from_logs(log, prior_strength=50)
    strong, _ = estimate_from_logs(log, prior_strength=0.5)
    assert weak["s1"].straggle_probability < strong["s1"].straggle_probability


def test_bad_log_rows_are_refused_with_their_row_numbers(tmp_path):
    p = tmp_path / "log.csv"
    p.write_text("job,worker,server,iteration,duration\nj,0,s0,1,10\nj,1,s1,x,10\nj,2,,3,-1\nj,3,s3,4,nan\n")
    with pytest.raises(placement.InvalidInputError) as e:
        read_iteration_log(p)
    msgs = "\n".join(e.value.problems)
    assert "row 3: iteration must be an integer" in msgs
    assert "row 4: empty server; duration must be a number > 0" in msgs
    assert "row 5: duration must be a number > 0, got 'nan'" in msgs
    p.write_text("job,worker,duration\nj,0,1\n")
    with pytest.raises(placement.InvalidInputError, match="missing column"):
        read_iteration_log(p)


def telemetry_csv(path, servers=("s0", "s1"), n=40, cpu_load=None, gap_at=None, bad_value_at=None):
    rng = np.random.default_rng(1)
    lines = ["server,time,cpu,memory,network,gpu"]
    for s in servers:
        u = 0.3
        for t in range(n):
            if gap_at is not None and s == servers[0] and t == gap_at:
                continue
            base = (cpu_load or {}).get(s, 0.2)
            u = 0.6 * u + 0.4 * base + 0.02 * rng.standard_normal()
            cpu = min(max(u, 0.0), 1.0)
            if bad_value_at is not None and t == bad_value_at and s == servers[0]:
                cpu = 1.7
            lines.append(f"{s},{t * 60},{cpu:.4f},0.3,0.1,0.5")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_telemetry_gaps_and_bad_values_are_refused(tmp_path):
    with pytest.raises(TelemetryError, match="jumps from time 540 to 660"):
        read_telemetry(telemetry_csv(tmp_path / "t.csv", gap_at=10))
    with pytest.raises(TelemetryError, match=r"row \d+: cpu must be a utilisation in \[0, 1\], got '1.7000'"):
        read_telemetry(telemetry_csv(tmp_path / "t.csv", bad_value_at=3))


def test_ar_forecast_recovers_the_level():
    rng = np.random.default_rng(0)
    y = [0.5]
    for _ in range(500):
        y.append(0.2 + 0.6 * y[-1] + 0.05 * rng.standard_normal())
    f1 = forecast(np.array(y), order=1, horizon=1)
    f10 = forecast(np.array(y), order=1, horizon=10)
    assert abs(f10.mean - 0.5) < 0.05  # the stationary mean 0.2 / (1 - 0.6)
    assert 0.04 < f1.sd < 0.06 and f10.sd > f1.sd  # error grows with the horizon


def test_product_distribution():
    a, b = Slowdown((1.0, 2.0), (0.5, 0.5)), Slowdown((1.0, 3.0), (0.75, 0.25))
    p = product(a, b)
    assert math.isclose(p.mean(), a.mean() * b.mean()) and math.isclose(sum(p.probs), 1.0)
    assert p.values == (1.0, 2.0, 3.0, 6.0)


def test_contention_slows_the_cpu_bound_job_on_the_cpu_loaded_server(tmp_path):
    inst = placement.load_bundled("tiny")
    ids = [s.id for s in inst.servers]
    tele = read_telemetry(telemetry_csv(tmp_path / "t.csv", servers=ids[:2], cpu_load={ids[0]: 0.85, ids[1]: 0.1}))
    jobs = [j.id for j in inst.jobs]
    dem = tmp_path / "d.csv"
    dem.write_text(f"job,cpu,memory,network,gpu\n{jobs[0]},0.5,,,\n{jobs[1]},,,0.5,\n")
    over = contention_overrides(inst, tele, read_demands(dem))
    assert ids[0] in over[jobs[0]] and over[jobs[0]][ids[0]].mean() > 2.0
    assert ids[1] not in over.get(jobs[0], {})  # CPU there is free
    assert jobs[1] not in over  # the network is not loaded
    out = apply_estimates(inst, overrides=over)
    assert out.job_by_id[jobs[0]].slowdown[ids[0]] == over[jobs[0]][ids[0]]
    sol = placement.solve(out, "auto")
    assert ids[0] not in sol.assignment.get(jobs[0], {})  # the placement avoids it
    dem.write_text("job,cpu\nnope,0.5\n")
    with pytest.raises(TelemetryError, match="unknown job 'nope'"):
        contention_overrides(inst, tele, read_demands(dem))


@needs_pai
def test_estimate_cli_on_the_pai_logs(tmp_path):
    est, fleet = estimate_from_logs(read_pai(PAI))
    inst = pai_instance(sorted(est), {s: Slowdown() for s in est}, [Job("j", 8, 100.0, 50.0)], "pai")
    ip = tmp_path / "pai.json"
    placement.dump_instance(inst, ip)
    out = tmp_path / "est.json"
    r = CliRunner().invoke(cli, ["estimate", str(ip), *sum((["--pai", p] for p in PAI), []), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "P(straggle)" in r.stderr
    got = placement.load_instance(out)
    means = {s.id: s.slowdown.mean() for s in got.servers}
    assert means["job_4/w0"] > 1.3 and means["job_1/w5"] < 1.2


def test_estimate_cli_errors(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("job,worker,server,iteration,duration\nj,0,ghost,1,10\nj,1,ghost2,1,12\n")
    r = CliRunner().invoke(cli, ["estimate", "tiny", "--logs", str(log)])
    assert r.exit_code == 2 and "'ghost'" in r.stderr and "does not have" in r.stderr
    r = CliRunner().invoke(cli, ["estimate", "tiny"])
    assert r.exit_code == 2 and "nothing to estimate" in r.stderr
    log.write_text("job,worker,server,iteration,duration\nj,0,s0,1,zero\n")
    r = CliRunner().invoke(cli, ["estimate", "tiny", "--logs", str(log)])
    assert r.exit_code == 2 and "row 2" in r.stderr


@needs_pai
def test_backtest_estimates_beat_both_priors():
    r = backtest_pai(PAI, time_limit_s=2)
    assert r.loglik["estimate"] > r.loglik["fleet prior"] > r.loglik["no-straggler prior"]
    err = {m: sum(v.values()) / len(v) for m, v in r.job_error.items()}
    assert err["estimate"] < err["fleet prior"] and err["estimate"] < err["no-straggler prior"]
    assert r.replay["estimate"] < r.replay["fleet prior"] and r.replay["estimate"] < r.replay["no-straggler prior"]


@needs_pai
def test_backtest_writes_the_pai_shaped_cluster(tmp_path):
    from click.testing import CliRunner

    from placement.cli.main import cli

    out = tmp_path / "pai.json"
    r = CliRunner().invoke(cli, ["backtest", *PAI, "--time-limit", "1", "--write-cluster", str(out)])
    assert r.exit_code == 0, r.output
    inst = placement.load_instance(out)
    assert len(inst.servers) == 40 and all(s.gpus == 1 for s in inst.servers) and not inst.jobs
    assert {s.id.split("/")[0] for s in inst.servers} == {f"job_{k}" for k in range(1, 5)}

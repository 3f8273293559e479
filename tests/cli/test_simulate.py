"""`placement simulate`: a sweep through the CLI (isolated processes, resumable), its files,
and bad input refused with exit 2."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from placement.cli.main import cli
from placement.simulation.engine import SUMMARY_FIELDS


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "trace.csv"
    rows = ["submit_s,workers,iterations,model"] + [f"{10 * i},{1 + i % 4},{500 + 37 * i},resnet50" for i in range(30)]
    p.write_text("\n".join(rows) + "\n")
    return p


def test_a_sweep_writes_every_file_and_resumes(trace, tmp_path):
    out = tmp_path / "sim"
    args = (
        "simulate",
        "tiny",
        "--trace",
        str(trace),
        "-m",
        "greedy,first_fit",
        "--knowledge",
        "oracle,oblivious",
        "--dynamics",
        "static",
        "--seeds",
        "0",
        "-o",
        str(out),
    )
    r = run(*args)
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    # 2 methods x 2 knowledge under static, plus each method's straggler-free reference
    assert len(summary) == 6 and all(s["status"] == "finished" for s in summary)
    for s in summary:
        assert set(SUMMARY_FIELDS) <= set(s) and s["jobs_finished"] == 30
        assert (out / "jobs" / f"{s['label']}.csv").exists() and (out / "timeline" / f"{s['label']}.csv").exists()
    for f in ("report.md", "jct_cdf.png", "timeline.png", "runs.jsonl"):
        assert (out / f).exists()
    assert "share removed" in (out / "report.md").read_text()
    again = run(*args)
    assert again.exit_code == 0 and "6 configurations (6 already in" in again.stderr
    assert len((out / "runs.jsonl").read_text().splitlines()) == 6


def test_one_configuration_runs_here_and_is_deterministic(trace, tmp_path):
    """auto's decisions stop on the work clock (the default), so two runs agree exactly."""
    docs = []
    for name in ("a", "b"):
        r = run(
            "simulate",
            "tiny",
            "--trace",
            str(trace),
            "--dynamics",
            "onset",
            "--episode-median-s",
            "60",
            "-m",
            "auto",
            "--knowledge",
            "estimated",
            "--change-points",
            "bocpd",
            "--no-reference",
            "--seeds",
            "4",
            "-o",
            str(tmp_path / name),
        )
        assert r.exit_code == 0, r.output
        docs.append(json.loads((tmp_path / name / "summary.json").read_text()))
    strip = [[{k: v for k, v in s.items() if "time" not in k and k != "wall_s"} for s in d] for d in docs]
    assert strip[0] == strip[1] and len(strip[0]) == 1


def test_comm_off_and_measured_durations_from_the_cli(tmp_path):
    """A plain trace's durations are measurements: with communication off, every job runs its
    duration wherever it is placed; the held placements are written."""
    p = tmp_path / "d.csv"
    p.write_text(
        "id,submit_s,workers,duration_s,model\n" + "".join(f"j{i},{i},{1 + i % 8},{100 + i},vgg16\n" for i in range(12))
    )
    r = run(
        "simulate",
        "tiny",
        "--trace",
        str(p),
        "--dynamics",
        "none",
        "--comm",
        "off",
        "--no-reference",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.exit_code == 0, r.output
    (s,) = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["jobs_comm_scaled"] == 0 and s["jobs_w1"] + s["jobs_w2_8"] == 12
    with open(tmp_path / "o" / "jobs" / f"{s['label']}.csv", newline="") as f:
        runs = sorted(round(float(row["run_s"]), 6) for row in csv.DictReader(f))
    assert runs == [100.0 + i for i in range(12)]
    held = (tmp_path / "o" / "held" / f"{s['label']}.csv").read_text().splitlines()
    assert held[0] == "job,from_s,to_s,placement" and len(held) == 13


def test_min_workers_and_widen_pick_and_widen_the_jobs(tmp_path):
    """``--min-workers 3 --widen 2``: the jobs of 3+ GPUs, each twice as wide (weak scaling: a
    job's run is its duration wherever it goes, with communication off); too wide for the 12 GPUs
    of ``tiny`` after widening: dropped with ``--drop-wider``, refused (exit 2) without."""
    p = tmp_path / "d.csv"
    p.write_text(
        "id,submit_s,workers,duration_s,model\n" + "".join(f"j{i},{i},{1 + i % 8},{100 + i},vgg16\n" for i in range(12))
    )
    base = ("simulate", "tiny", "--trace", str(p), "--dynamics", "none", "--comm", "off", "--no-reference")
    r = run(*base, "--min-workers", "3", "--widen", "2", "--drop-wider", "-o", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    (s,) = json.loads((tmp_path / "o" / "summary.json").read_text())
    with open(tmp_path / "o" / "jobs" / f"{s['label']}.csv", newline="") as f:
        rows = {row["job"]: row for row in csv.DictReader(f)}
    kept = {f"j{i}": 2 * (1 + i % 8) for i in range(12) if 1 + i % 8 >= 3 and 2 * (1 + i % 8) <= 12}
    assert {j: int(row["workers"]) for j, row in rows.items()} == kept
    assert all(float(rows[j]["run_s"]) == pytest.approx(100.0 + int(j[1:])) for j in kept)
    wide = run(*base, "--min-workers", "3", "--widen", "2", "-o", str(tmp_path / "o2"))
    assert wide.exit_code == 2 and "'j6'" in wide.stderr and not (tmp_path / "o2" / "summary.json").exists()


def test_bad_trace_rows_are_refused_with_their_row_numbers(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("submit_s,workers,iterations\n0,2,100\nnan,1,100\n5,-3,100\n7,1,zero\n")
    r = run("simulate", "tiny", "--trace", str(p), "-o", str(tmp_path / "o"))
    assert r.exit_code == 2
    for line in ("row 3", "row 4", "row 5"):
        assert line in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "o" / "summary.json").exists()


def test_a_job_wider_than_the_cluster_is_named(tmp_path):
    p = tmp_path / "wide.csv"
    p.write_text("id,submit_s,workers,iterations\nsmall,0,2,100\nhuge,5,4096,100\n")
    r = run("simulate", "tiny", "--trace", str(p), "-o", str(tmp_path / "o"))
    assert r.exit_code == 2 and "'huge'" in r.stderr and "4096" in r.stderr
    ok = run("simulate", "tiny", "--trace", str(p), "--drop-wider", "--no-reference", "-o", str(tmp_path / "o2"))
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--knowledge", "psychic"), "--knowledge"),
        (("--dynamics", "replay"), "replay"),
        (("--seeds", "x"), "--seeds"),
        (("-m", "no_such_method"), "unknown method"),
        (("--replan-events", "freed", "-m", "greedy"), "re-planning"),
        (("--replan", "sometimes"), "--replan"),
        (("--comm", "partly"), "--comm"),
        (("--comm-share-max", "1"), "--comm-share-max"),
    ],
)
def test_bad_options_exit_2(trace, tmp_path, extra, message):
    r = run("simulate", "tiny", "--trace", str(trace), "-o", str(tmp_path / "o"), *extra)
    assert r.exit_code == 2 and message in r.stderr, r.output


def test_the_estimated_runs_logs_feed_placement_estimate(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("submit_s,workers,iterations\n" + "".join(f"{60 * i},{2 + i % 3},4000\n" for i in range(20)))
    out = tmp_path / "sim"
    r = run(
        "simulate",
        "tiny",
        "--trace",
        str(p),
        "--knowledge",
        "estimated",
        "--dynamics",
        "static",
        "--estimate-every-s",
        "60",
        "--no-reference",
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.output
    (log,) = (out / "logs").glob("*.csv")
    from placement.estimate import read_iteration_log

    data = read_iteration_log(log)
    assert len(data.duration) > 0 and set(data.server) <= {f"s{i}" for i in range(10)}
    est = run("estimate", "tiny", "--logs", str(log), "-o", str(tmp_path / "est.json"))
    assert est.exit_code == 0, est.output


def test_the_decision_log_records_every_placement_and_finish(trace, tmp_path):
    """``--decision-log``: each run's decisions, one JSON object a line, in time order: every
    job offered in the instance format, placed (where) and finished; nothing without the flag."""
    out = tmp_path / "sim"
    args = ["simulate", "tiny", "--trace", str(trace), "-m", "greedy", "--knowledge", "oracle"]
    r = run(*args, "--dynamics", "static", "--no-reference", "--decision-log", "-o", str(out))
    assert r.exit_code == 0, r.output
    (log,) = (out / "decisions").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["t"] for r in records] == sorted(r["t"] for r in records)
    places = [r for r in records if r["kind"] == "place"]
    offered = {j["id"] for r in places for j in r["jobs"]}
    placed = {j for r in places for j in r["placed"]}
    finished = {r["job"] for r in records if r["kind"] == "finish"}
    assert len(offered) == len(placed) == len(finished) == 30
    first = places[0]
    assert {"workers", "compute_ms", "gradient_mb", "iterations"} <= set(first["jobs"][0])
    assert all(
        sum(a.values()) == next(j["workers"] for j in first["jobs"] if j["id"] == jid)
        for jid, a in first["placed"].items()
    )
    plain = tmp_path / "plain"
    assert run(*args, "--dynamics", "static", "--no-reference", "-o", str(plain)).exit_code == 0
    assert not (plain / "decisions").exists()


def test_the_measured_law_runs_from_the_cli_and_draws_its_domains(tmp_path):
    """``--dynamics measured`` on a bundled cluster: the run finishes, writes every file (the
    servers' picture skips the domains' rows), and its log of hidden changes names domains."""
    out = tmp_path / "m"
    long = tmp_path / "long.csv"  # two weeks of work on eight GPUs each: domains congest meanwhile
    rows = ["submit_s,workers,iterations,model"] + [f"{60 * i},8,{4_000_000 + 1000 * i},resnet50" for i in range(30)]
    long.write_text("\n".join(rows) + "\n")
    r = run(
        "simulate",
        "pod256",
        "--trace",
        str(long),
        "--dynamics",
        "measured",
        "-m",
        "consolidate",
        "--knowledge",
        "oblivious",
        "--no-reference",
        "--seeds",
        "0",
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())[0]["jobs_finished"] == 30
    assert list((out / "servers").glob("*.png"))

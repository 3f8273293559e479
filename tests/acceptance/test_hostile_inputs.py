"""Every input a user can type is refused cleanly (issue "Every input a user can type"): exit 2
with the option, field or row named, no traceback, no destroyed file."""

from __future__ import annotations

import json
import os
import stat

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.cli.main import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def refused(r, *words: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in r.output, r.output


@pytest.mark.parametrize("depth", [65, 300, 5000])
def test_deep_nesting_in_free_form_fields(tmp_path, depth):
    d = placement.instance_to_dict(placement.load_bundled("tiny"))
    text = json.dumps(d)[:-1] + ', "metadata": {"x": ' + "[" * depth + "]" * depth + "}}"
    p = tmp_path / "deep.json"
    p.write_text(text)
    refused(run("validate", str(p)), "nested")


def test_integers_with_thousands_of_digits(tmp_path):
    d = json.dumps(placement.instance_to_dict(placement.load_bundled("tiny")))
    p = tmp_path / "big.json"
    p.write_text(d.replace('"workers": 1', '"workers": ' + "9" * 5000, 1))
    refused(run("validate", str(p)), "jobs[0].workers must be an integer of at most 18 digits", "(5000 digits)")
    r = run("validate", str(p))
    assert "1 problem" in r.output  # named once, by its JSON path (not again as null)


def test_a_null_document_says_so(tmp_path):
    p = tmp_path / "null.json"
    p.write_text("null")
    refused(run("validate", str(p)), "JSON null")


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(["nan", "inf", "-inf", "NaN", "Infinity"]),
    st.sampled_from(
        [
            ("solve", "tiny", "--time-limit"),
            ("generate", "--nic-gbps"),
            ("generate", "--load"),
            ("simulate", "tiny", "--trace", "elasticflow-cluster03", "--load"),
            ("estimate", "tiny", "--half-life"),
        ]
    ),
)
def test_non_finite_numbers_in_options(value, command):
    r = run(*command, value)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output


def test_level_gbps_must_be_finite(tmp_path):
    conf = tmp_path / "t.conf"
    conf.write_text("SwitchName=s0 Nodes=n[0-3]\n")
    refused(run("import-slurm", str(conf), "--level-gbps", "inf"), "finite")


@pytest.mark.parametrize(
    "args, words",
    [
        (("evaluate", "tiny", "x.json", "--monte-carlo", "1000000000"), ("--monte-carlo",)),
        (("generate", "--racks", "100000", "--servers-per-rack", "100000"), ("servers",)),
        (("generate", "--jobs", "2000000"), ("jobs must be at most",)),
    ],
)
def test_sizes_without_bounds_are_refused_before_any_work(args, words):
    refused(run(*args), *words)


def test_a_hostlist_of_billions_is_refused(tmp_path):
    conf = tmp_path / "t.conf"
    conf.write_text("SwitchName=s0 Nodes=gpu[0-99999999999]\n")
    refused(run("import-slurm", str(conf), "--level-gbps", "100,25"), "more than 1,000,000 hosts")


def test_any_seed_reaches_every_backend():
    inst = placement.load_bundled("tiny")
    for method in ("cpsat", "greedy", "random"):
        sol = placement.solve(inst, method, seed=10**30, time_limit_s=5)
        assert sol.status.has_placement and sol.stats["seed"] == 10**30


def test_output_files_honour_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        out = tmp_path / "x.json"
        assert run("generate", "--jobs", "2", "-o", str(out)).exit_code == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_compare_out_pointing_at_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    refused(run("compare", "tiny", "-m", "greedy", "-o", str(f)), "not a folder")
    assert f.read_text() == "x"


def test_markup_in_ids_is_printed_as_text(tmp_path):
    inst = placement.load_bundled("tiny")
    job = inst.jobs[0]
    odd = inst.replace(jobs=(job.__class__(**{**job.__dict__, "id": "[bold]j[/x]"}),), name="[red]x")
    p = tmp_path / "odd.json"
    placement.dump_instance(odd, p)
    r = run("solve", str(p), "-m", "greedy", "-o", str(tmp_path / "s.json"))
    assert r.exit_code == 0, r.output
    assert "[bold]j[/x]" in r.stderr and "[red]x" in r.stderr


def test_a_solution_of_another_instance_is_flagged(tmp_path):
    sol = placement.solve(placement.load_bundled("tiny"), "greedy")
    p = tmp_path / "s.json"
    placement.dump_solution(sol, p)
    other = placement.load_bundled("tiny").replace(name="renamed")
    q = tmp_path / "renamed.json"
    placement.dump_instance(other, q)
    r = run("validate", str(q), str(p))
    assert r.exit_code == 0 and "is a solution of instance 'tiny'" in r.stderr


@pytest.mark.parametrize("kind", ["logs", "telemetry", "demands"])
def test_csv_side_files_that_are_not_utf8(tmp_path, kind):
    bad = tmp_path / "bad.csv"
    good_tel = tmp_path / "tel.csv"
    good_tel.write_text(
        "server,time,cpu,memory,network,gpu\n" + "".join(f"s0,{t},0.5,0.5,0.5,0.5\n" for t in range(10))
    )
    good_dem = tmp_path / "dem.csv"
    good_dem.write_text("job,cpu\nj0,0.1\n")
    header = {
        "logs": b"job,worker,server,iteration,duration\n",
        "telemetry": b"server,time,cpu,memory,network,gpu\n",
        "demands": b"job,cpu\n",
    }[kind]
    bad.write_bytes(header + b"j,0,\xff\xfe,1,100\n")
    args = {
        "logs": ("--logs", str(bad)),
        "telemetry": ("--telemetry", str(bad), "--demands", str(good_dem)),
        "demands": ("--telemetry", str(good_tel), "--demands", str(bad)),
    }[kind]
    refused(run("estimate", "tiny", *args, "-o", str(tmp_path / "o.json")), "not UTF-8")


def test_a_one_row_pai_file(tmp_path):
    p = tmp_path / "job_1_norm.csv"
    p.write_text(",worker,gpu,time,batch_time_norm\n0,0,100,0,500\n")
    refused(run("backtest", str(p)), "no iteration with two or more workers")


def test_an_over_long_csv_field(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("job,worker,server,iteration,duration\nj,0,s0,1," + "9" * 200_000 + "\n")
    refused(run("estimate", "tiny", "--logs", str(p), "-o", str(tmp_path / "o.json")), "row 2", "field larger")


HUGE = ["1e20", "9" * 30, "1e300", "-1e20"]


@pytest.mark.parametrize("cell", HUGE)
def test_numbers_out_of_range_in_every_side_file_name_their_row(tmp_path, cell):
    """Each numeric column of each side file is range-checked, row named (was an OverflowError,
    exit 1, for an iteration of 1e20)."""
    out = str(tmp_path / "o.json")
    logs = tmp_path / "logs.csv"
    logs.write_text(f"job,worker,server,iteration,duration\nj,0,s0,1,100\nj,1,s1,{cell},100\nj,1,s1,2,{cell}\n")
    refused(run("estimate", "tiny", "--logs", str(logs), "-o", out), "row 3: iteration must be an integer", "row 4")
    tel = tmp_path / "tel.csv"
    rows = [f"s0,{t},0.5,0.5,0.5,0.5" for t in range(10)] + [f"s1,{cell},0.5,0.5,0.5,0.5"]
    tel.write_text("server,time,cpu,memory,network,gpu\n" + "\n".join(rows) + "\n")
    dem = tmp_path / "dem.csv"
    dem.write_text(f"job,cpu\nj0,{cell}\n")
    refused(run("estimate", "tiny", "--telemetry", str(tel), "--demands", str(dem), "-o", out), "row 12: time")
    good_tel = tmp_path / "good.csv"
    good_tel.write_text("server,time,cpu,memory,network,gpu\n" + "\n".join(rows[:10]) + "\n")
    refused(run("estimate", "tiny", "--telemetry", str(good_tel), "--demands", str(dem), "-o", out), "row 2: cpu")
    trace = tmp_path / "trace.csv"
    trace.write_text(f"submit_s,workers,iterations,model\n0,1,100,resnet50\n{cell},{cell},{cell},resnet50\n")
    r = run("simulate", "tiny", "--trace", str(trace), "-o", str(tmp_path / "sim"))
    refused(r, "row 3, submit_s", "row 3, workers", "row 3, iterations")
    replay = tmp_path / "replay.csv"
    replay.write_text(f"time_s,server,slowdown\n0,s0,1.5\n{cell},s0,{cell}\n")
    good = tmp_path / "good.csv"
    good.write_text("submit_s,workers,iterations,model\n0,1,100,resnet50\n")
    r = run(
        "simulate",
        "tiny",
        "--trace",
        str(good),
        "-m",
        "greedy,consolidate",
        "--dynamics",
        "replay",
        "--replay",
        str(replay),
        "-o",
        str(tmp_path / "sim2"),
    )
    refused(r, "row 3: time_s must be", "slowdown must be")
    assert not (tmp_path / "sim2" / "runs.jsonl").exists()  # refused before any run


def test_a_trace_that_leaves_no_job_is_refused(tmp_path):
    r = run("simulate", "tiny", "--trace", "elasticflow-cluster03", "--max-jobs", "3", "--drop-wider")
    refused(r, "no job left to simulate", "dropped 3 wider than the cluster")


def test_an_interrupt_exits_130_with_one_line_and_no_file(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "sim"  # one long configuration runs in the command's own process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement.cli.main",
            "simulate",
            "pod256",
            "--trace",
            "elasticflow-cluster04",
            "--no-reference",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert time.monotonic() - t < 5 and not (out / "summary.json").exists()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupted_compare_leaves_no_worker_and_no_temporary_file(tmp_path, sig):
    import glob
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "placement-run-*.json")))
    out = tmp_path / "sweep"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement.cli.main",
            "compare",
            "library/medium/hetero",
            "library/medium/hot",
            "-m",
            "cpsat",
            "--time-limits",
            "60",
            "--parallel",
            "2",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)
    proc.send_signal(getattr(signal, sig))
    t = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert time.monotonic() - t < 5
    time.sleep(0.5)
    workers = subprocess.run(["pgrep", "-f", "placement.compare.worker"], capture_output=True, text=True).stdout
    assert workers.strip() == "", workers
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "placement-run-*.json")))
    assert after <= before
    assert not (out / "runs.jsonl").exists() or (out / "runs.jsonl").read_text() == ""


@pytest.mark.parametrize("method", ["milp_highs", "cpsat"])
def test_an_interrupt_stops_an_exact_solve_within_seconds(tmp_path, method):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "s.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement.cli.main",
            "solve",
            "library/large/calm",
            "-m",
            method,
            "--time-limit",
            "60",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(8)
    proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    _, err = proc.communicate(timeout=60)
    # typically 1.3 s here; the bound only has to tell it from running on to the 60-s limit on a
    # loaded machine (a native phase such as handing the model to HiGHS is not interruptible)
    assert time.monotonic() - t < 10, err
    # both solvers are stopped and the command with them: one line, nothing written
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    "conf, words",
    [
        ("SwitchName=s0 Switches=s0\nSwitchName=leaf Nodes=n[0-1]\n", ("switch cycle",)),
        ("SwitchName=leaf Nodes=leaf,n1\n", ("duplicates node id 'leaf'", "self-loop")),
    ],
)
def test_import_slurm_never_writes_what_the_loader_refuses(tmp_path, conf, words):
    p = tmp_path / "t.conf"
    p.write_text(conf)
    out = tmp_path / "i.json"
    refused(run("import-slurm", str(p), "--level-gbps", "100,25,10", "-o", str(out)), *words)
    assert not out.exists()


def _catches_sigint(pid: int) -> bool:
    """Whether process ``pid`` has installed a SIGINT handler (Linux: the SigCgt mask)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (2 - 1)))  # SIGINT is signal 2
    return False


def test_an_interrupt_during_start_up_is_one_line(tmp_path):
    import shutil
    import signal
    import subprocess
    import time

    exe = shutil.which("placement")
    if exe is None:
        pytest.skip("the placement console script is not installed in this environment")
    if not os.path.exists(f"/proc/{os.getpid()}/status"):
        pytest.skip("needs Linux's /proc to see when the command has installed its handler")
    # The child starts with SIGINT ignored, as under nohup or a CI runner's background job:
    # then Python installs no handler of its own, and the first handler the child installs
    # is the command's (its very first step).  The test waits for that handler, so "during
    # start-up" is a fact, not a guess at how fast a loaded machine starts Python; before it,
    # no program can act on the signal.
    for delay in (0.0, 0.6):  # while the modules load, or once the command runs: the same answer
        proc = subprocess.Popen(
            [
                exe,
                "simulate",
                "pod256",
                "--trace",
                "elasticflow-cluster04",
                "--no-reference",
                "-o",
                str(tmp_path / f"s{delay}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        deadline = time.monotonic() + 60
        while not _catches_sigint(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err and "interrupted" in err, (delay, err)

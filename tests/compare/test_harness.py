import os
import textwrap

import pytest
from click.testing import CliRunner

import placement
from placement.cli.main import cli
from placement.compare import Run, compare, expand_instances, isolated_run, read_rows, shifted_geomean, summarise

BAD_METHODS = textwrap.dedent("""
    import os, time
    from placement.methods.greedy import greedy

    def hang(instance, opts):
        time.sleep(10_000)

    def crash(instance, opts):
        os._exit(7)

    def liar(instance, opts):
        out = greedy(instance, opts)
        out.optimal = True          # a false claim: solve() cannot check it, the oracle can
        return out
""")


@pytest.fixture
def bad_methods(tmp_path, monkeypatch):
    (tmp_path / "badmethods.py").write_text(BAD_METHODS)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_isolated_run_returns_a_row_with_the_evaluator_numbers():
    row = isolated_run(Run("tiny", "greedy", 0, 5.0))
    inst = placement.load_bundled("tiny")
    sol = placement.solve(inst, "greedy")
    assert row["status"] == "feasible" and row["valid"] is True
    assert row["objective"] == pytest.approx(sol.objective, rel=1e-12)
    assert row["peak_mem_mb"] > 0 and row["gpus"] == sum(s.free_gpus for s in inst.servers)
    assert row["excess_over_ideal"] >= 0


def test_a_hanging_method_is_killed_and_a_crashing_one_recorded(bad_methods):
    hung = isolated_run(Run("tiny", "badmethods:hang", 0, 1.0), grace_s=1.0)
    assert hung["status"] == "killed" and "killed" in hung["error"]
    crashed = isolated_run(Run("tiny", "badmethods:crash", 0, 1.0))
    assert crashed["status"] == "crashed" and "exit code 7" in crashed["error"]
    refused = isolated_run(Run("pod256", "brute_force", 0, 1.0))
    assert refused["status"] == "refused"


def test_sweep_survives_failures_resumes_and_reports(bad_methods, tmp_path):
    out = tmp_path / "sweep"
    methods = ["greedy", "first_fit", "badmethods:hang", "badmethods:crash"]
    rows = compare(
        ["tiny", "library/tiny/hot"],
        methods,
        time_limits=[1.0],
        out_dir=out,
        grace_s=1.0,
        progress=False,
        say=lambda m: None,
    )
    assert len(rows) == 8
    st = {(r["instance"], r["method"]): r["status"] for r in rows}
    assert st[("tiny", "badmethods:hang")] == "killed" and st[("tiny", "badmethods:crash")] == "crashed"
    assert st[("tiny", "greedy")] == "feasible"
    for f in ("runs.jsonl", "runs.csv", "report.md", "profile.png", "objective_vs_time.png", "time_vs_size.png"):
        assert (out / f).stat().st_size > 0, f
    # interrupted sweep: drop two rows, cut the last line in half; re-running redoes only those
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][: len(lines[5]) // 2] + "\n")
    said = []
    rows2 = compare(
        ["tiny", "library/tiny/hot"],
        methods,
        time_limits=[1.0],
        out_dir=out,
        grace_s=1.0,
        progress=False,
        say=said.append,
    )
    assert "(5 already in" in said[0]
    assert len(rows2) == 8 and len(read_rows(out / "runs.jsonl")) == 8
    report = (out / "report.md").read_text()
    assert "| greedy |" in report and "| badmethods:hang |" in report
    summary = {s["method"]: s for s in summarise(rows2)}
    assert summary["badmethods:hang"]["failed"] == 2 and summary["greedy"]["solved"] == 2


def test_threads_times_parallel_never_exceed_cores(tmp_path):
    said = []
    compare(["tiny"], ["greedy"], threads=64, parallel=8, out_dir=tmp_path / "s", progress=False, say=said.append)
    assert "1 at a time x 64 thread(s)" in said[0]
    assert any("lowered" in m for m in said)


def test_expand_instances_folders_files_and_bundled(tmp_path):
    p = tmp_path / "a.json"
    placement.dump_instance(placement.load_bundled("tiny"), p)
    got = expand_instances([str(tmp_path), "demo", "library/tiny"])
    assert got[0] == str(p) and "demo" in got and "library/tiny/hot" in got
    with pytest.raises(placement.InvalidInputError):
        expand_instances(["no-such-thing"])


def test_report_statistics():
    assert shifted_geomean([1.0, 1.0], 1.0) == pytest.approx(1.0)
    assert shifted_geomean([0.0, 3.0], 1.0) == pytest.approx(1.0)
    rows = [
        {
            "instance": "i",
            "time_limit_s": 1,
            "seed": 0,
            "method": "a",
            "valid": True,
            "objective": 10.0,
            "placed_weight": 1,
            "wall_s": 1,
            "ideal_lower_bound": 5.0,
        },
        {
            "instance": "i",
            "time_limit_s": 1,
            "seed": 0,
            "method": "auto",
            "valid": True,
            "objective": 8.0,
            "placed_weight": 1,
            "wall_s": 1,
            "ideal_lower_bound": 5.0,
        },
        {
            "instance": "i",
            "time_limit_s": 1,
            "seed": 0,
            "method": "first_fit",
            "valid": True,
            "objective": 11.0,
            "placed_weight": 1,
            "wall_s": 1,
            "ideal_lower_bound": 5.0,
        },
        {
            "instance": "i",
            "time_limit_s": 1,
            "seed": 0,
            "method": "x",
            "valid": False,
            "objective": None,
            "placed_weight": 0,
            "wall_s": 1,
            "status": "crashed",
        },
    ]
    s = {r["method"]: r for r in summarise(rows)}
    assert s["auto"]["wins"] == 1 and s["a"]["objective_gm_ratio"] == pytest.approx(1.25)
    assert s["first_fit"]["auto_removes"] == pytest.approx(0.5)  # (11 - 8) / (11 - 5)
    assert s["x"]["solved"] == 0 and s["x"]["failed"] == 1


def test_compare_cli(tmp_path):
    r = CliRunner().invoke(
        cli, ["compare", "tiny", "-m", "greedy,spread", "--time-limits", "2", "-o", str(tmp_path / "c")]
    )
    assert r.exit_code == 0, r.output
    assert "greedy" in r.stdout and "objective/best" in r.stdout
    assert (tmp_path / "c" / "runs.csv").read_text().count("\n") == 3
    r = CliRunner().invoke(cli, ["compare", "tiny", "-m", "simplex"])
    assert r.exit_code == 2 and "valid methods" in r.stderr
    r = CliRunner().invoke(cli, ["compare", "tiny", "--time-limits", "x"])
    assert r.exit_code == 2


UNRUNNABLE = {
    "nope.mod:func": "nope",
    "badsig:two": "must take (instance, options)",
    "badsig:missing": "has no function 'missing'",
    "badsig:VALUE": "not a function",
    "badload:f": "importing badload fails: RuntimeError: boom",
}


@pytest.mark.parametrize("method", sorted(UNRUNNABLE))
def test_a_user_method_that_cannot_run_is_refused_before_any_run(method, tmp_path, monkeypatch):
    (tmp_path / "badsig.py").write_text("VALUE = 3\n\ndef two(a, b, c):\n    return None\n")
    (tmp_path / "badload.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "c"
    r = CliRunner().invoke(cli, ["compare", "tiny", "-m", f"greedy,{method}", "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert method in r.stderr and UNRUNNABLE[method] in r.stderr, r.stderr
    assert not out.exists()  # refused before the sweep made its folder or started a worker
    with pytest.raises((placement.InvalidInputError, placement.MethodUnavailableError), match="method"):
        compare(["tiny"], [method], out_dir=out)
    assert not out.exists()
    r = CliRunner().invoke(cli, ["solve", "tiny", "-m", method])
    assert r.exit_code == 2 and UNRUNNABLE[method] in r.stderr, r.output


def test_sweep_on_a_local_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    rows = compare(
        ["tiny"],
        ["greedy", "first_fit"],
        time_limits=[2.0],
        out_dir=tmp_path / "d",
        dask="local",
        parallel=2,
        progress=False,
        say=lambda m: None,
    )
    assert sorted(r["method"] for r in rows) == ["first_fit", "greedy"]
    assert all(r["status"] == "feasible" and r["valid"] for r in rows)


def test_a_user_method_runs_through_validation(bad_methods):
    # a method that claims optimality it has not proven: the claim passes solve() (it cannot
    # prove otherwise) but the brute-force oracle in the user's own tests can catch it
    sol = placement.solve(placement.load_bundled("library/tiny/hot"), "badmethods:liar")
    assert sol.status.value == "optimal"
    inst = placement.load_bundled("library/tiny/hot")
    assert sol.objective >= inst.metadata["optimum"] * (1 - 1e-9)


def test_a_resumed_sweep_reports_every_row_in_its_folder(tmp_path, monkeypatch):
    # a user's method that refuses every instance (MethodUnavailableError): a refused row
    (tmp_path / "refusing.py").write_text(
        "from placement.errors import MethodUnavailableError\n\n"
        "def place(instance, options):\n    raise MethodUnavailableError('not this instance')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "sweep"
    compare(["library/tiny/hot"], ["greedy"], out_dir=out, progress=False, say=lambda m: None)
    rows = compare(
        ["library/tiny/hot"], ["first_fit", "refusing:place"], out_dir=out, progress=False, say=lambda m: None
    )
    assert {r["method"] for r in rows} == {"first_fit", "refusing:place"}
    report = (out / "report.md").read_text()
    assert "| greedy |" in report and "| first_fit |" in report  # both sweeps' methods
    assert len((out / "runs.csv").read_text().splitlines()) == 1 + 3
    assert "## Per instance" in report and "refused" in report
    s = {r["method"]: r for r in summarise(read_rows(out / "runs.jsonl"))}
    assert s["refusing:place"]["refused"] == 1 and s["refusing:place"]["solved"] == 0
    from placement.compare.report import ratios

    assert "refusing:place" not in ratios(read_rows(out / "runs.jsonl"))  # refused: no ratio


def test_the_report_gives_every_run_its_proven_gap():
    from placement.compare.report import gap_table, proven_gap

    rows = [
        dict(
            instance="a",
            method="auto",
            time_limit_s=10.0,
            seed=0,
            valid=True,
            status="feasible",
            objective=110.0,
            bound=100.0,
        ),
        dict(
            instance="a",
            method="milp",
            time_limit_s=10.0,
            seed=0,
            valid=True,
            status="optimal",
            objective=100.0,
            bound=100.0,
        ),
        dict(
            instance="a",
            method="greedy",
            time_limit_s=10.0,
            seed=0,
            valid=True,
            status="feasible",
            objective=120.0,
            bound=None,
        ),
        dict(
            instance="a",
            method="bad",
            time_limit_s=10.0,
            seed=0,
            valid=False,
            status="error",
            objective=None,
            bound=None,
        ),
    ]
    assert proven_gap(rows[0]) == pytest.approx(0.10)
    assert proven_gap(rows[2]) is None and proven_gap(rows[3]) is None
    table = "\n".join(gap_table(rows))
    assert "| a | 10 | 0 | 10% | optimal | - | error |" in table
    summary = {s["method"]: s for s in summarise(rows)}
    assert summary["auto"]["gap_median"] == pytest.approx(0.10) and summary["greedy"]["gap_median"] is None

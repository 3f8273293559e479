"""The newcomer's path (issue "The newcomer's path"): what a user meets in the first hour."""

from __future__ import annotations

import json
import os

import click
import pytest
from click.testing import CliRunner
from hypothesis import find
from hypothesis.errors import NoSuchExample
from support.paths import ROOT as REPO_ROOT

import placement
from placement.cli.main import cli
from placement.model import Instance, Job, Link, Server, Switch
from placement.solving import Options, Outcome
from placement.testing import check_solution, instances


def test_a_policy_that_ignores_gpu_types_fails_check_solution_with_the_violation():
    servers = (Server("v0", 4, "V100", 1200.0), Server("a0", 4, "A100", 2400.0))
    inst = Instance(
        "typed",
        servers,
        (Job("j", 2, 100.0, 10.0, gpu_speed={"A100": 1.0}),),
        (Switch("t"),),
        (Link("v0", "t", 100.0), Link("a0", "t", 100.0)),
    )
    sol = placement.solve(inst, "support.policies:broken_first_fit")
    assert sol.status.value == "error"
    with pytest.raises(AssertionError, match="cannot run on GPU type 'V100'"):
        check_solution(inst, sol)


def test_property_testing_finds_the_broken_policy():
    def fails(inst: Instance) -> bool:
        try:
            check_solution(inst, placement.solve(inst, "support.policies:broken_first_fit"))
        except AssertionError:
            return True
        return False

    try:
        find(instances(heterogeneous=True), fails)
    except NoSuchExample:  # pragma: no cover - the assertion below says what went wrong
        pytest.fail("200 generated instances did not catch a policy that ignores GPU types")


def test_the_custom_policy_types_are_exported_and_no_future_import_leaks():
    assert placement.Options is Options and placement.Outcome is Outcome
    assert not hasattr(placement, "annotations")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def too_big(tmp_path):
    inst = placement.load_bundled("tiny")
    total = sum(s.free_gpus for s in inst.servers)
    big = inst.replace(jobs=(Job("huge", total + 6, 100.0, 10.0),))
    p = tmp_path / "big.json"
    placement.dump_instance(big, p)
    return p, total


def test_infeasible_says_which_job_and_by_how_much(too_big):
    p, total = too_big
    r = run("solve", str(p), "-q")
    assert r.exit_code == 3
    sol = placement.solve(placement.load_instance(p), "auto")
    assert sol.status.value == "infeasible"
    assert f"job 'huge' needs {total + 6} GPUs but at most {total}" in sol.stats["message"]
    summary = run("solve", str(p))
    assert f"needs {total + 6} GPUs" in summary.stderr
    v = run("validate", str(p))
    assert v.exit_code == 0 and "warning: no placement places every job" in v.stderr and "'huge'" in v.stderr


@pytest.mark.parametrize("where", ["missing", "folder", "same"])
def test_a_bad_output_path_is_refused_before_solving(tmp_path, where):
    src = tmp_path / "tiny.json"
    placement.dump_instance(placement.load_bundled("tiny"), src)
    before = src.read_bytes()
    out = {"missing": tmp_path / "nodir" / "x.json", "folder": tmp_path, "same": src}[where]
    r = run("solve", str(src), "-o", str(out), "--time-limit", "30")
    assert r.exit_code == 2 and "--output" in r.stderr and "Traceback" not in r.output
    assert src.read_bytes() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere: a read-only folder cannot be made here")
def test_a_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    r = run("solve", "tiny", "-o", str(ro / "x.json"))
    assert r.exit_code == 2 and "permission" in r.stderr


def test_a_folder_of_bundled_instances_is_named_as_such():
    r = run("solve", "library/medium", "-q")
    assert r.exit_code == 2 and "folder of 8 bundled instances" in r.stderr and "library/medium/calm" in r.stderr
    assert "no such file" not in r.stderr.lower()
    doc = json.loads(run("solve", "library/medium/calm", "-m", "greedy", "-q").stdout)
    assert doc["instance"] == "medium-calm"


def test_every_option_of_every_command_says_what_it_does():
    missing = {
        name: [p.name for p in cmd.params if p.param_type_name == "option" and not getattr(p, "help", None)]
        for name, cmd in ((n, cli.get_command(click.Context(cli), n)) for n in cli.list_commands(click.Context(cli)))
    }
    assert {k: v for k, v in missing.items() if v} == {}
    for name in ("compare", "simulate"):  # -o is --output everywhere (and --out where a folder is written)
        assert "--output" in run(name, "--help").stdout


def test_a_misspelt_method_or_field_gets_a_suggestion(tmp_path):
    r = run("solve", "tiny", "-m", "gredy")
    assert r.exit_code == 2 and "did you mean 'greedy'?" in r.stderr
    d = placement.instance_to_dict(placement.load_bundled("tiny"))
    d["jobs"][0]["worker"] = 3
    p = tmp_path / "typo.json"
    p.write_text(json.dumps(d))
    r = run("validate", str(p))
    assert r.exit_code == 2 and "jobs[0]: unknown field 'worker' (did you mean 'workers'?)" in r.stderr


def test_on_a_terminal_solve_shows_the_summary_not_the_json():
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "placement.cli.main", "solve", "tiny", "-m", "greedy"],
        stdout=slave,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.returncode == 0
    assert b'"format"' not in out
    assert "goes to stdout when it is piped" in proc.stderr


def test_the_summary_says_what_was_placed_and_what_the_columns_mean():
    r = run("solve", "pod256", "-m", "greedy")
    assert "placed 24 of 24 jobs, weight 30 of 30" in r.stderr
    for col in ("weight", "within", "expected ms: E[slowest worker", "P(straggle): probability"):
        assert col in r.stderr


def test_problems_come_in_document_order_with_the_items_id():
    d = placement.instance_to_dict(placement.load_bundled("pod256"))
    d["topology"]["nodes"][10]["gpus"] = -1
    d["topology"]["nodes"][2]["gpus"] = -2
    with pytest.raises(placement.InstanceError) as e:
        placement.instance_from_dict(d)
    gpu_problems = [p for p in e.value.problems if ".gpus must be" in p]
    assert gpu_problems == [
        "topology.nodes[2].gpus must be an integer >= 0, got -2 (node 's2')",
        "topology.nodes[10].gpus must be an integer >= 0, got -1 (node 's10')",
    ]


def test_the_readme_example_instance_loads_and_solves(tmp_path):
    import re

    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"written by hand.*?```json\n(.*?)```", text, re.S)
    assert block, "the README's hand-written example is gone"
    p = tmp_path / "hello.json"
    p.write_text(block.group(1))
    inst = placement.load_instance(p)
    sol = placement.solve(inst, "auto", time_limit_s=5)
    check_solution(inst, sol)
    assert sol.assignment == {"train": {"s0": 8}}  # the server that never slows down


def test_estimate_maps_log_servers_onto_the_instance_and_names_unknown_ones_plainly(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    log = tmp_path / "log.csv"
    rows = ["job,worker,server,iteration,duration"]
    for it in range(200):
        for w in range(3):
            slow = 2.0 if (w == 1 and rng.random() < 0.3) else 1.0
            rows.append(f"j,{w},w{w},{it},{100 * slow * (1 + 0.01 * rng.random()):.3f}")
    log.write_text("\n".join(rows) + "\n")
    r = run("estimate", "tiny", "--logs", str(log), "-o", str(tmp_path / "a.json"))
    assert r.exit_code == 2 and "the logs name server 'w0'" in r.stderr and "np.str_" not in r.stderr
    m = tmp_path / "map.csv"
    m.write_text("log_server,server\n" + "".join(f"w{w},s{w}\n" for w in range(3)))
    r = run("estimate", "tiny", "--logs", str(log), "--map", str(m), "-o", str(tmp_path / "b.json"))
    assert r.exit_code == 0, r.output
    est = placement.load_instance(tmp_path / "b.json")
    means = {s.id: s.slowdown.mean() for s in est.servers}
    assert means["s1"] == max(means[f"s{w}"] for w in range(3))  # the straggling worker's server
    bad = tmp_path / "bad.csv"
    bad.write_text("log_server,server\nw0,s0\nw1,nowhere\nw0,s2\n")
    r = run("estimate", "tiny", "--logs", str(log), "--map", str(bad), "-o", str(tmp_path / "c.json"))
    assert r.exit_code == 2 and "row 3: server 'nowhere'" in r.stderr and "row 4: log server 'w0'" in r.stderr


def test_generate_warns_about_an_infeasible_instance_and_names_what_it_made(tmp_path):
    out = tmp_path / "x.json"
    r = run(
        "generate",
        "--racks",
        "1",
        "--servers-per-rack",
        "1",
        "--gpus-per-server",
        "1",
        "--jobs",
        "3",
        "--job-mix",
        "small",
        "-o",
        str(out),
    )
    assert r.exit_code == 0 and "has no placement of every job" in r.stderr and "3 GPUs" in r.stderr
    r = run("generate", "--servers-from", "alibaba-v2023", "--jobs", "3", "-o", str(tmp_path / "y.json"))
    inst = placement.load_instance(tmp_path / "y.json")
    assert "alibaba-v2023" in inst.name and "x8-" not in inst.name  # not named by a shape it does not have
    assert f"{inst.name}: {len(inst.servers)} servers" in r.stderr


def test_the_command_list_is_not_cut_and_compare_takes_time_limit_too(tmp_path):
    listing = run("--help").stdout
    commands = listing.split("Commands:")[1]
    assert "..." not in commands and "simulate" in commands
    r = run("compare", "library/tiny/hot", "-m", "greedy", "--time-limit", "5", "-o", str(tmp_path / "s"))
    assert r.exit_code == 0, r.output


def test_auto_reports_its_steps_with_evaluated_objectives_and_valid_bounds():
    inst = placement.load_bundled("pod256")
    heard = []
    sol = placement.solve(inst, "auto", time_limit_s=4, progress=lambda *a: heard.append(a))
    steps = [s for s, _, _ in heard]
    assert steps[0] == "greedy" and "bound" in steps
    greedy = placement.solve(inst, "greedy")
    assert heard[0][1] == pytest.approx(greedy.objective, rel=1e-12)  # the evaluator's number
    for _, objective, bound in heard:
        assert objective is not None and objective >= sol.objective * (1 - 1e-12)
        assert bound is None or bound <= objective


def test_the_readme_stays_a_page_a_newcomer_reads_and_its_local_links_resolve():
    import re

    text = (REPO_ROOT / "README.md").read_text()
    assert len(text.encode()) <= 40_000, "README.md is over the house's 40 KB: move detail beside its code"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (REPO_ROOT / target).exists(), f"README links to {target}, which is not in the tree"

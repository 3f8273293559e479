import copy
import json

import pytest
from click.testing import CliRunner
from support.documents import BAD, BASE, mutate

import placement
from placement.cli.main import cli


@pytest.fixture
def run():
    def go(*args):
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return go


def test_solve_default_instance_prints_solution_json_and_summary(run):
    r = run("solve", "--time-limit", "2")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["format"] == "placement-solution/1" and doc["instance"] == "demo"
    assert doc["status"] in ("feasible", "optimal")
    assert "objective=" in r.stderr and "P(straggle)" in r.stderr
    inst = placement.load_bundled("demo")
    sol = placement.solution_from_dict(doc, inst)
    assert placement.validate(inst, sol.assignment) == []
    assert sol.objective == pytest.approx(placement.evaluate(inst, sol.assignment).objective, rel=1e-12)


def test_solve_output_file_then_validate_and_evaluate(run, tmp_path):
    out = tmp_path / "sol.json"
    r = run("solve", "tiny", "-m", "greedy", "--seed", "3", "--threads", "1", "-o", str(out), "-q")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""
    inst_path = str(placement.instances.bundled_path("tiny"))
    r = run("validate", inst_path, str(out))
    assert r.exit_code == 0 and "valid placement" in r.stdout
    r = run("evaluate", "tiny", str(out), "--monte-carlo", "2000", "--seed", "1")
    assert r.exit_code == 0
    ev = json.loads(r.stdout)
    assert ev["monte_carlo"]["samples"] == 2000
    assert ev["objective"] == pytest.approx(json.loads(out.read_text())["objective"], rel=1e-12)


def test_validate_reports_every_violation_with_exit_2(run, tmp_path):
    inst = placement.load_bundled("tiny")
    sol = placement.solve(inst, "greedy")
    d = placement.solution_to_dict(sol)
    j0 = inst.jobs[0].id
    d["assignment"][j0] = {inst.servers[0].id: inst.jobs[0].workers + 50}
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    r = run("validate", "tiny", str(p))
    assert r.exit_code == 2
    assert "[gang]" in r.stderr and "[gpus]" in r.stderr
    r = run("evaluate", "tiny", str(p))
    assert r.exit_code == 2 and r.stdout == ""


@pytest.mark.parametrize("name,fn,expect", BAD, ids=[b[0] for b in BAD])
def test_every_bad_input_class_exits_2_naming_the_field(run, tmp_path, name, fn, expect):
    p = tmp_path / "inst.json"
    p.write_text(json.dumps(mutate(fn)))
    out = tmp_path / "out.json"
    r = run("solve", str(p), "-o", str(out))
    assert r.exit_code == 2
    assert expect in r.stderr
    assert "Traceback" not in r.output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [p]  # no temporary file left either


@pytest.mark.parametrize(
    "text,expect",
    [
        ('{"format": "placement-instance/1", "name": ', "malformed JSON"),
        (
            json.dumps(BASE).replace('"compute_ms": 120', '"compute_ms": NaN'),
            "jobs[0].compute_ms must be a finite number, got NaN",
        ),
        (json.dumps(BASE).replace('"compute_ms": 120', '"compute_ms": Infinity'), "got Infinity"),
        (json.dumps(BASE).replace('"compute_ms": 120', '"compute_ms": 1e999'), "got 1e999"),
        ("[]", "must be a JSON object"),
        ("", "malformed JSON"),
        ("\xff\xfe", "malformed JSON"),
    ],
)
def test_unparseable_files_exit_2(run, tmp_path, text, expect):
    p = tmp_path / "inst.json"
    p.write_text(text)
    r = run("solve", str(p))
    assert r.exit_code == 2 and expect in r.stderr and r.stdout == ""


def test_missing_file_unknown_name_and_unknown_method_exit_2(run, tmp_path):
    r = run("solve", str(tmp_path / "nope.json"))
    assert r.exit_code == 2 and "cannot read" in r.stderr
    r = run("solve", "no-such-bundled")
    assert r.exit_code == 2 and "bundled" in r.stderr
    r = run("solve", "tiny", "-m", "simplex")
    assert r.exit_code == 2 and "valid methods: auto" in r.stderr
    r = run("solve", "tiny", "--time-limit", "-1")
    assert r.exit_code == 2
    r = run("solve", "pod256", "-m", "brute_force")
    assert r.exit_code == 2 and "brute_force" in r.stderr


def test_infeasible_exits_3(run, tmp_path):
    d = copy.deepcopy(BASE)
    d["jobs"][0]["workers"] = 40
    p = tmp_path / "inst.json"
    p.write_text(json.dumps(d))
    out = tmp_path / "o.json"
    r = run("solve", str(p), "-o", str(out))
    assert r.exit_code == 3
    assert json.loads(out.read_text())["status"] == "infeasible"
    assert "status=infeasible" in r.stderr


def test_no_solution_within_the_limit_exits_4(run, tmp_path):
    r = run("solve", "tiny", "-m", "brute_force", "--time-limit", "0.000000001")
    assert r.exit_code == 4
    assert json.loads(r.stdout)["status"] == "no_solution"


def test_methods_json(run):
    r = run("methods", "--format", "json")
    rows = json.loads(r.stdout)
    assert [x["name"] for x in rows][0] == "auto"
    assert all(set(x) == {"name", "kind", "available", "description"} for x in rows)
    assert run("methods").exit_code == 0


def test_generate_writes_a_reproducible_instance(run, tmp_path):
    out = tmp_path / "g.json"
    args = [
        "generate",
        "--topology",
        "multi-pod",
        "--pods",
        "2",
        "--racks",
        "2",
        "--regime",
        "correlated",
        "--jobs",
        "6",
        "--seed",
        "5",
        "-o",
        str(out),
    ]
    r = run(*args)
    assert r.exit_code == 0
    inst = placement.load_instance(out)
    assert inst.scenarios is not None and len(inst.jobs) == 6
    from placement.instances.generate import from_source

    assert from_source(inst.source) == inst
    r2 = run(
        "generate",
        "--topology",
        "multi-pod",
        "--pods",
        "2",
        "--racks",
        "2",
        "--regime",
        "correlated",
        "--jobs",
        "6",
        "--seed",
        "5",
    )
    assert json.loads(r2.stdout) == json.loads(out.read_text())
    r3 = run("generate", "--gpu-types", "A100,Z80")
    assert r3.exit_code == 2 and "unknown GPU type 'Z80'" in r3.stderr


def test_validate_instance_only(run):
    r = run("validate", "hetero")
    assert r.exit_code == 0 and "valid instance" in r.stdout


def test_the_command_table_lists_every_verb_and_loads_each_only_when_it_runs():
    import subprocess
    import sys

    import click

    from placement.cli.main import COMMANDS

    ctx = click.Context(cli)
    for verb, (_module, summary) in COMMANDS.items():
        cmd = cli.get_command(ctx, verb)
        assert cmd is not None and cmd.name == verb and cmd.short_help == summary, verb
    assert cli.get_command(ctx, "nonsense") is None
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom placement.cli.main import cli\n"
        "r = CliRunner().invoke(cli, ['--help'])\n"
        "print(r.exit_code, sorted(m for m in sys.modules if m.startswith('placement.cli.commands.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0 []"  # --help lists the table's summaries without importing a verb
    help_text = " ".join(CliRunner().invoke(cli, ["--help"]).stdout.split())
    assert all(verb in help_text and summary in help_text for verb, (_, summary) in COMMANDS.items())

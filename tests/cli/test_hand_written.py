"""A placement written by hand: a solution file with only what places the jobs (``assignment``,
and ``stages`` for hybrid jobs) is read by every command that reads a solution, which
recomputes the rest."""

import json

import pytest
from click.testing import CliRunner

import placement
from placement.cli.main import cli
from placement.errors import SolutionFormatError
from placement.formats import solution_from_dict


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _by_hand(tmp_path, name, method, keep=("assignment",), **extra):
    """The placement ``method`` finds on bundled ``name``, written with only the ``keep`` fields."""
    inst = placement.load_bundled(name)
    sol = placement.solve(inst, method, time_limit_s=5, seed=0)
    full = placement.solution_to_dict(sol)
    doc = {"format": "placement-solution/1", **{k: full[k] for k in keep}, **extra}
    p = tmp_path / f"{name}-by-hand.json"
    p.write_text(json.dumps(doc))
    return inst, sol, p


def test_evaluate_validate_explain_show_and_export_read_a_placement_written_by_hand(tmp_path):
    inst, sol, p = _by_hand(tmp_path, "demo", "greedy")
    r = _run("evaluate", "demo", p)
    assert r.exit_code == 0, r.output
    ev = json.loads(r.stdout)
    assert ev["objective"] == pytest.approx(sol.objective, rel=1e-12)
    assert ev["unplaced"] == list(sol.unplaced)
    assert "warning" not in r.stderr  # no instance named: it is the one given
    r = _run("validate", "demo", p)
    assert r.exit_code == 0 and "valid placement" in r.stdout
    r = _run("explain", p, "--instance", "demo")
    assert r.exit_code == 0, r.output
    r = _run("show", p, "--instance", "demo", "-o", tmp_path / "pic.svg")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "pic.svg").stat().st_size > 0
    r = _run("export", p, "--instance", "demo", "--to", "slurm", "-o", tmp_path / "slurm")
    assert r.exit_code == 0, r.output
    assert sorted(f.name for f in (tmp_path / "slurm").iterdir())


def test_a_hybrid_placement_by_hand_gives_its_stages(tmp_path):
    inst, sol, p = _by_hand(tmp_path, "hybrid-tiny", "greedy", keep=("assignment", "stages"))
    assert sol.stages
    r = _run("evaluate", "hybrid-tiny", p)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["objective"] == pytest.approx(sol.objective, rel=1e-12)


def test_outputs_given_by_hand_are_checked_or_noted(tmp_path):
    inst, sol, _ = _by_hand(tmp_path, "demo", "greedy")
    placed = next(iter(sol.assignment))
    # a job both placed and listed as unplaced: refused by the validator, exit 2
    _, _, p = _by_hand(tmp_path, "demo", "greedy", keep=("assignment",), unplaced=[placed])
    r = _run("evaluate", "demo", p)
    assert r.exit_code == 2 and f"job {placed!r} is both placed and listed as unplaced" in r.stderr
    assert r.stdout == ""
    # an objective that the evaluator does not compute: noted, the recomputation printed
    _, _, p = _by_hand(tmp_path, "demo", "greedy", keep=("assignment",), objective=1.0)
    r = _run("evaluate", "demo", p)
    assert r.exit_code == 0 and "the file says objective 1" in r.stderr
    assert json.loads(r.stdout)["objective"] == pytest.approx(sol.objective, rel=1e-12)


def test_the_reader_fills_the_outputs_and_still_refuses_what_places_badly():
    inst = placement.load_bundled("demo")
    sol = placement.solve(inst, "greedy")
    job, servers = next(iter(sol.assignment.items()))
    back = solution_from_dict({"format": "placement-solution/1", "assignment": {job: dict(servers)}}, inst)
    assert back.instance == inst.name and back.method == "given" and back.status.value == "feasible"
    assert back.objective is None and back.bound is None and back.jobs == {} and back.stats == {}
    assert set(back.unplaced) == {j.id for j in inst.jobs} - {job}
    # without an instance nothing is known to be unplaced
    assert solution_from_dict({"format": "placement-solution/1", "assignment": {}}).unplaced == ()
    with pytest.raises(SolutionFormatError) as e:
        solution_from_dict({"format": "placement-solution/1", "assignment": {job: {"s99": 0}}}, inst)
    assert any("s99" in p for p in e.value.problems)
    with pytest.raises(SolutionFormatError, match="assignment"):
        solution_from_dict({"format": "placement-solution/1", "instance": inst.name}, inst)

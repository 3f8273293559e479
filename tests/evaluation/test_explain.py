"""``placement.explain`` and ``placement explain``: the parts sum to the evaluator's figures, tail
shares against a direct evaluation, alternatives that an optimal placement cannot beat."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.cli.main import cli
from placement.evaluation.explain import JOB_KEYS
from placement.formats import instance_from_dict, instance_to_dict
from placement.model import Instance, Job, Link, Server, Slowdown, Switch
from placement.testing import instances


def held_by_document(inst: Instance, job_id: str, sid: str) -> Instance:
    """``inst`` with ``sid`` held at its lowest slowdown value, edited as a user would edit the
    JSON document (not the way the explainer builds it)."""
    d = instance_to_dict(inst)
    for n in d["topology"]["nodes"]:
        if n.get("id") == sid and "slowdown" in n:
            n["slowdown"] = {"values": [min(n["slowdown"]["values"])], "probs": [1.0]}
    if "scenarios" in d and sid in d["scenarios"]["slowdowns"]:
        row = d["scenarios"]["slowdowns"][sid]
        d["scenarios"]["slowdowns"][sid] = [min(row)] * len(row)
    for j in d["jobs"]:
        over = j.get("slowdown", {}).get(sid)
        if over is not None:
            j["slowdown"][sid] = (
                {"values": [min(over["values"])], "probs": [1.0]} if isinstance(over, dict) else [min(over)] * len(over)
            )
    return instance_from_dict(d)


@settings(max_examples=25, deadline=None)
@given(instances(max_servers=4, max_jobs=3), st.integers(0, 3))
def test_the_parts_sum_to_the_evaluator_s_figures_and_tail_shares_match_a_direct_evaluation(inst, seed):
    sol = placement.solve(inst, "greedy", seed=seed)
    if not sol.assignment:
        return
    ex = placement.explain(inst, sol)
    assert set(ex) == set(sol.assignment)
    for jid, e in ex.items():
        assert tuple(e) == JOB_KEYS
        rep = sol.jobs[jid]
        assert e["expected_iteration_ms"] == rep.expected_iteration_ms
        assert e["ideal_iteration_ms"] == rep.ideal_iteration_ms
        assert e["compute_ms"] + e["communication_ms"] == e["ideal_iteration_ms"]  # exactly
        assert sum(e["communication"].values()) == e["communication_ms"]
        assert set(e["communication"]) == {"push_pull" if sol.shards.get(jid) else "all_reduce"}
        assert e["ideal_iteration_ms"] + e["straggler_penalty_ms"] == pytest.approx(
            rep.expected_iteration_ms, rel=1e-12
        )
        assert e["straggler_probability"] == rep.straggler_probability
        for sid, s in e["servers"].items():
            assert s["workers"] == sol.assignment[jid].get(sid, 0)
            assert s["shards"] == sol.shards.get(jid, {}).get(sid, 0)
            held = held_by_document(inst, jid, sid)
            direct = placement.evaluate(
                held, {jid: sol.assignment[jid]}, {jid: sol.shards[jid]} if jid in sol.shards else None
            )
            assert s["tail_share_ms"] == pytest.approx(
                rep.expected_iteration_ms - direct.jobs[jid].expected_iteration_ms, rel=1e-9, abs=1e-9
            )
            assert s["tail_share_ms"] >= -1e-9


def two_servers() -> Instance:
    servers = (
        Server("hot", 4, "A100", 2400.0, slowdown=Slowdown((1.0, 3.0), (0.5, 0.5))),
        Server("calm", 4, "A100", 2400.0),
    )
    jobs = (Job("j", 1, 100.0, 0.0),)
    return Instance("two", servers, jobs, (Switch("t"),), (Link("hot", "t", 100.0), Link("calm", "t", 100.0)))


def test_a_job_on_a_hot_server_is_told_its_tail_and_the_move_that_helps():
    inst = two_servers()
    sol = placement.solve(inst, "first_fit")
    assert sol.assignment == {"j": {"hot": 1}}
    e = placement.explain(inst, sol)["j"]
    assert e["expected_iteration_ms"] == pytest.approx(200.0) and e["ideal_iteration_ms"] == pytest.approx(100.0)
    assert e["servers"]["hot"]["tail_share_ms"] == pytest.approx(100.0)  # all of the penalty
    move = e["alternatives"]["move"]
    assert move["from"] == "hot" and move["to"] == "calm" and move["delta_objective"] < 0
    assert e["limits"] == {}


def test_an_optimal_placement_has_no_better_move_or_swap():
    inst = placement.load_bundled("library/tiny/hot")
    sol = placement.solve(inst, "brute_force")
    assert sol.status.value == "optimal"
    for e in placement.explain(inst, sol).values():
        for alt in e["alternatives"].values():
            assert alt is None or alt["delta_objective"] >= -1e-9 * max(1.0, sol.objective)


def test_binding_limits_are_named():
    servers = (Server("a", 2, "A100", 2400.0, cpus=8.0), Server("b", 2, "V100", 1200.0, cpus=8.0))
    job = Job(
        "j",
        2,
        100.0,
        10.0,
        gpu_speed={"A100": 1.0},
        cpus_per_worker=4.0,
        max_servers=1,
        iterations=1000,
        deadline_s=105.0,
    )
    inst = Instance("lim", servers, (job,), (Switch("t"),), (Link("a", "t", 100.0), Link("b", "t", 100.0)))
    sol = placement.solve(inst, "greedy")
    limits = placement.explain(inst, sol)["j"]["limits"]
    assert set(limits) == {"gpus", "cpu", "type", "max_servers", "deadline"}
    assert limits["type"] == "may not use V100" and "105 s" in limits["deadline"]


def test_the_cli_prints_jobs_by_penalty_and_the_json_of_every_figure(tmp_path):
    sol_path = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["solve", "pod256", "-m", "greedy", "-q", "-o", str(sol_path)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["explain", str(sol_path), "--instance", "pod256"])
    assert r.exit_code == 0, r.output
    ex = placement.explain(placement.load_bundled("pod256"), placement.load_solution(sol_path))
    order = sorted(ex, key=lambda j: -ex[j]["straggler_penalty_ms"])
    rows = [line.split()[0] for line in r.stdout.splitlines() if line.split() and line.split()[0] in ex]
    assert rows == order
    r = CliRunner().invoke(
        cli, ["explain", str(sol_path), "--instance", "pod256", "--job", order[0], "--format", "json"]
    )
    doc = json.loads(r.stdout)
    assert list(doc["jobs"]) == [order[0]] and tuple(doc["jobs"][order[0]]) == JOB_KEYS
    r = CliRunner().invoke(cli, ["explain", str(sol_path), "--instance", "pod256", "--job", "nope"])
    assert r.exit_code == 2 and "job 'nope' is not placed by the solution" in r.stderr

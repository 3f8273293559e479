"""Queue policies (:mod:`placement.simulation.queues`): who runs, composed with any placement
method; preemption keeps a job's progress and charges its restart; the peers' rules; and the
cross-checks against ElasticFlow's own simulator on the README window."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.instances import load_bundled
from placement.model import Instance, Link, Server, Switch
from placement.simulation import simulate
from placement.simulation.config import QUEUES
from placement.simulation.queues import QUEUES as POLICIES
from placement.simulation.queues import Candidate
from placement.simulation.queues.gavel import max_min_shares, water_fill
from placement.simulation.queues.tiresias import Tiresias
from placement.simulation.workload import TraceJob, Workload, read_trace
from placement.solving import solve

PREEMPTIVE = [q for q in QUEUES if POLICIES[q].preemptive]
ALONE = [q for q in QUEUES if q != "replay"]
"""The policies that need nothing but the trace (``replay`` replays another run's starts)."""
EXACT = dict(knowledge="oblivious", dynamics="none", comm="off")
"""No stragglers and free communication: a job runs iterations x compute_ms wherever it is."""


def rack(servers: int, gpus: int = 4, used: tuple[int, ...] = ()) -> Instance:
    s = tuple(Server(f"s{i}", gpus, "A100", 2400.0, used_gpus=used[i] if i < len(used) else 0) for i in range(servers))
    return Instance("rack", s, (), (Switch("tor"),), tuple(Link(x.id, "tor", 100.0) for x in s))


def jobs(*rows: tuple[str, float, int, int]) -> Workload:
    """(id, submit_s, workers, iterations) at 100 ms an iteration."""
    return Workload(tuple(TraceJob(j, t, w, n, 100.0, 50.0) for j, t, w, n in rows), "hand", {})


def by_job(result) -> dict[str, dict]:
    return {r["job"]: r for r in result.jobs}


def test_a_strict_fifo_head_blocks_the_jobs_behind_it_and_backfilling_does_not():
    # a holds one server for 100 s; b needs both; c fits the free server at once
    w = jobs(("a", 0.0, 4, 1000), ("b", 1.0, 8, 1000), ("c", 2.0, 4, 10))
    fifo = by_job(simulate(rack(2), w, method="consolidate", queue="fifo", **EXACT))
    strict = by_job(simulate(rack(2), w, method="consolidate", queue="fifo-strict", **EXACT))
    assert fifo["c"]["start_s"] == 2.0 and fifo["b"]["start_s"] == pytest.approx(100.0)
    assert strict["b"]["start_s"] == pytest.approx(100.0)
    assert strict["c"]["start_s"] == pytest.approx(200.0)  # behind b, which ran 100-200 s


def test_srtf_preempts_a_long_job_which_resumes_where_it_stopped_after_its_restart():
    w = jobs(("long", 0.0, 4, 10_000), ("short", 100.0, 4, 100))
    r = by_job(simulate(rack(1), w, method="consolidate", queue="srtf", restart_s=50.0, **EXACT))
    assert r["short"]["start_s"] == 100.0 and r["short"]["jct_s"] == pytest.approx(10.0)
    # 100 s run, preempted 100-110 s, 50 s restart, the 900 s left: ends at 1,060 s
    assert r["long"]["end_s"] == pytest.approx(1060.0) and r["long"]["preemptions"] == 1
    assert r["long"]["run_s"] == pytest.approx(1050.0) and r["long"]["queue_s"] == pytest.approx(10.0)
    fifo = by_job(simulate(rack(1), w, method="consolidate", queue="fifo", restart_s=50.0, **EXACT))
    assert fifo["short"]["start_s"] == pytest.approx(1000.0) and fifo["long"]["preemptions"] == 0


def test_tiresias_demotes_a_job_when_its_attained_gpu_seconds_cross_the_threshold():
    # long (4 GPUs) reaches 3,250 GPU-s at 812.5 s; until then it outranks the waiting job
    # (one queue, running jobs first); then the waiting job, still in the top queue, preempts it
    w = jobs(("long", 0.0, 4, 100_000), ("late", 100.0, 4, 500))
    res = simulate(rack(1), w, method="consolidate", queue="tiresias", restart_s=0.0, **EXACT)
    r = by_job(res)
    assert r["late"]["start_s"] == pytest.approx(812.5, abs=0.01)
    assert r["long"]["preemptions"] == 1 and res.summary["preemptions"] == 1
    assert r["long"]["run_s"] == pytest.approx(10_000.0)  # no progress lost, no restart charged


def test_tiresias_starvation_knob_promotes_a_job_that_waited_long_enough():
    t = Tiresias(rack(1), starvation=2.0)
    j = TraceJob("j", 0.0, 4, 1, 100.0, 50.0)
    waited = Candidate(j, running=False, served_s=2000.0, remaining_s=1.0, stopped_s=0.0)
    assert t.level(3999.0, waited) == 2  # 8,000 GPU-s attained: the third queue
    assert t.level(4000.0, waited) == 0  # waited twice what it ran: back on top
    # promoted, its service counts afresh: it is not demoted again at once
    assert t.level(4001.0, Candidate(j, running=True, served_s=2001.0, remaining_s=1.0, stopped_s=0.0)) == 0
    k = TraceJob("k", 0.0, 4, 1, 100.0, 50.0)
    assert t.level(0.0, Candidate(k, running=True, served_s=1000.0, remaining_s=1.0, stopped_s=0.0)) == 1
    assert Tiresias(rack(1)).level(10**6, waited) == 2


def test_gavel_decides_only_at_its_rounds_and_shares_the_gpus_by_turns():
    w = jobs(("a", 10.0, 4, 100_000), ("b", 20.0, 4, 100_000))
    res = simulate(rack(1), w, method="first_fit", queue="gavel", restart_s=0.0, **EXACT)
    r = by_job(res)
    assert r["a"]["start_s"] == 360.0  # the first round
    # equal shares: they take turns by rounds, and each resumes on the GPUs it held
    assert r["a"]["preemptions"] >= 10 and r["b"]["preemptions"] >= 10
    assert r["a"]["placement"] == r["b"]["placement"] == "s0:4"
    assert abs(r["a"]["end_s"] - r["b"]["end_s"]) <= 2 * 360.0


@pytest.mark.parametrize(("queue", "restart"), [("gavel", 400.0), ("las", 800.0)])
def test_a_restart_longer_than_a_turn_is_not_service_and_jobs_still_finish(queue, restart):
    # a restart counted as service would leave each resumed job preempted before it computes
    w = jobs(("a", 10.0, 4, 10_000), ("b", 20.0, 4, 10_000))  # 1,000 s of work each
    res = simulate(rack(1), w, method="first_fit", queue=queue, restart_s=restart, **EXACT)
    for r in res.jobs:
        assert r["run_s"] == pytest.approx(r["isolated_s"] + r["preemptions"] * restart)
        assert r["end_s"] < 10_000.0


def test_srtf_counts_the_restart_a_preempted_job_would_pay_and_does_not_swap_back_and_forth():
    w = jobs(
        ("A", 0.0, 4, 1000),
        ("B", 10.0, 4, 600),
        ("C", 20.0, 4, 50),
        *[(f"D{i}", 30.0 + 5 * i, 4, 100_000) for i in range(8)],
    )
    res = simulate(rack(1), w, method="first_fit", queue="srtf", restart_s=50.0, **EXACT)
    r = by_job(res)
    assert r["A"]["preemptions"] == 1 and r["B"]["preemptions"] == 1 and r["C"]["preemptions"] == 0
    # every restart that was served, and no more, is in the restart GPU-hours
    served = sum(r["run_s"] - r["isolated_s"] for r in res.jobs)
    assert res.summary["restart_gpu_hours"] == pytest.approx(4 * served / 3600.0)


def test_a_running_job_is_preempted_only_where_an_admitted_placement_takes_its_gpus():
    # e needs a whole server (Tiresias's placement) and outranks a and b, but none is free:
    # a and b keep running until c and d leave s0 and s1 one GPU each short of whole
    w = jobs(
        ("a", 0.0, 3, 100_000),
        ("b", 1.0, 3, 60_030),
        ("c", 2.0, 1, 60_000),
        ("d", 3.0, 1, 60_000),
        ("e", 4000.0, 4, 1000),
    )
    res = simulate(rack(2), w, method="whole_servers", queue="tiresias", restart_s=0.0, **EXACT)
    r = by_job(res)
    assert r["a"]["preemptions"] == 0  # its server never became whole
    assert r["e"]["start_s"] == pytest.approx(6003.0) and r["e"]["placement"] == "s1:4"
    assert r["b"]["preemptions"] == 1  # preempted at 6,003 s, when e took its server


def test_every_job_a_preemptive_policy_admits_starts_even_past_one_decisions_offer():
    w = jobs(*[(f"L{i}", 0.0, 1, 100_000) for i in range(4)], ("S1", 100.0, 1, 100), ("S2", 100.0, 1, 100))
    res = simulate(rack(1), w, method="first_fit", queue="srtf", restart_s=0.0, max_offer=1, **EXACT)
    r = by_job(res)
    assert r["S1"]["start_s"] == 100.0 and r["S2"]["start_s"] == 100.0


def test_water_filling_gives_every_gang_the_same_gpus_until_they_run_out():
    assert water_fill([1, 2, 8], 8) == pytest.approx([1.0, 1.0, 5 / 8])
    assert water_fill([4, 4], 16) == pytest.approx([1.0, 1.0])
    assert water_fill([4, 4, 4, 4], 8) == pytest.approx([0.5] * 4)


def test_gavels_heterogeneity_aware_shares_send_each_job_where_it_can_run():
    # job 0 runs on type A only, job 1 on both: max-min puts job 1 on B
    x = max_min_shares([4, 4], np.array([[1.0, 0.0], [1.0, 1.0]]), [4, 4])
    assert x[0, 0] == pytest.approx(1.0, abs=1e-6) and x[1, 1] == pytest.approx(1.0, abs=1e-6)
    assert x[0, 1] == pytest.approx(0.0, abs=1e-9) and (x.sum(axis=1) <= 1 + 1e-9).all()


@settings(deadline=None)
@given(seed=st.integers(0, 10_000), queue=st.sampled_from(ALONE), restart=st.sampled_from([0.0, 30.0]))
def test_every_policy_finishes_every_job_once_keeping_its_progress(seed, queue, restart):
    rng = np.random.default_rng(seed)
    w = Workload(
        tuple(
            TraceJob(
                f"j{i}",
                float(rng.integers(0, 600)),
                int(rng.choice([1, 2, 4, 8])),
                int(rng.integers(10, 5000)),
                100.0,
                50.0,
            )
            for i in range(12)
        ),
        "random",
        {},
    )
    res = simulate(rack(3), w, method="first_fit", queue=queue, restart_s=restart, **EXACT)
    assert sorted(r["job"] for r in res.jobs) == sorted(j.id for j in w.jobs)
    for r in res.jobs:
        assert r["queue_s"] + r["run_s"] == pytest.approx(r["jct_s"])
        # the run is the job's own work plus at most one restart per preemption
        assert r["isolated_s"] - 1e-6 <= r["run_s"] <= r["isolated_s"] + r["preemptions"] * restart + 1e-6
        if not POLICIES[queue].preemptive:
            assert r["preemptions"] == 0
    assert res.summary["preemptions"] == sum(r["preemptions"] for r in res.jobs)


@pytest.mark.parametrize("queue", PREEMPTIVE)
def test_preemptive_policies_compose_with_the_proactive_loop(queue):
    w = jobs(*[(f"j{i}", 60.0 * i, [1, 2, 4][i % 3], 2000 + 500 * i) for i in range(10)])
    res = simulate(load_bundled("tiny"), w, method="auto", knowledge="estimated", queue=queue)
    assert res.summary["jobs_finished"] == 10 and res.summary["rho_p95"] is not None


def test_tiresias_placement_takes_one_server_or_whole_free_servers_never_fragments():
    from placement.model import Job

    c = rack(3, used=(1,))  # s0 has 3 free GPUs, s1 and s2 are wholly free
    small = solve(c.replace(jobs=(Job("a", 3, 100.0, 50.0),)), "whole_servers")
    assert small.assignment == {"a": {"s0": 3}}
    wide = solve(c.replace(jobs=(Job("b", 6, 100.0, 50.0),)), "whole_servers")
    assert set(wide.assignment["b"]) == {"s1", "s2"}
    too_wide = solve(c.replace(jobs=(Job("c", 9, 100.0, 50.0),), admission="best_effort"), "whole_servers")
    assert not too_wide.assignment  # 11 GPUs free, but only 8 on whole servers
    frag = rack(3, used=(1, 1))  # 3 + 3 + 4 free: one whole server
    cons = solve(frag.replace(jobs=(Job("b", 6, 100.0, 50.0),)), "consolidate")
    assert dict(cons.assignment["b"]) == {"s2": 4, "s0": 2}  # consolidation takes a fragment
    tir = solve(frag.replace(jobs=(Job("b", 6, 100.0, 50.0),), admission="best_effort"), "whole_servers")
    assert not tir.assignment  # Tiresias waits for whole servers


@pytest.mark.parametrize(
    ("queue", "theirs", "within"),
    [("fifo", 23_698.0, 0.01), ("fifo-strict", 77_989.0, 0.02), ("tiresias", 24_259.0, 0.05)],
)
def test_the_readme_window_matches_elasticflows_simulator(queue, theirs, within):
    """ElasticFlow's simulator (pkusys/ElasticFlow at 04a0109, 32 servers x 8 GPUs, no overhead)
    on cluster04 days 28-30 (606 jobs): its mean JCT under each policy.  Consolidation with free
    communication, no stragglers and free restarts is what its model is."""
    w = read_trace("elasticflow-cluster04", window_start_s=2_419_200, window_s=48 * 3600.0)
    res = simulate(load_bundled("pod256"), w, method="consolidate", queue=queue, restart_s=0.0, **EXACT)
    assert res.summary["jobs_finished"] == 606
    assert res.summary["avg_jct_s"] == pytest.approx(theirs, rel=within)


def test_the_cli_takes_a_queue_policy_and_refuses_an_unknown_one(tmp_path):
    from click.testing import CliRunner

    from placement.cli.main import cli

    trace = tmp_path / "t.csv"
    trace.write_text(
        "submit_s,workers,duration_s\n" + "".join(f"{20 * i},{1 + i % 4},{300 + 40 * i}\n" for i in range(12))
    )
    out = tmp_path / "o"
    args = [
        "simulate",
        "tiny",
        "--trace",
        str(trace),
        "-m",
        "consolidate",
        "--knowledge",
        "oblivious",
        "--no-reference",
    ]
    r = CliRunner().invoke(cli, [*args, "--queue", "tiresias", "--starvation", "2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    import json

    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert rows[0]["queue"] == "tiresias" and rows[0]["jobs_finished"] == 12 and rows[0]["rho_p95"] > 0
    r = CliRunner().invoke(cli, [*args, "--queue", "lottery", "-o", str(tmp_path / "p")])
    assert r.exit_code == 2 and "lottery" in r.output and not (tmp_path / "p").exists()


def _starts_csv(tmp_path, result, name="starts.csv"):
    import csv

    p = tmp_path / name
    with open(p, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "start_s"])
        for r in result.jobs:
            w.writerow([r["job"], r["start_s"]])
    return p


def test_replaying_a_runs_own_starts_gives_the_same_run(tmp_path):
    """The fixed point: the same method on the starts of its own run starts every job when it
    started there (here FIFO's backfill, with a wide job that waits)."""
    w = jobs(*[(f"j{i}", 30.0 * i, [1, 2, 4, 8][i % 4], 500 + 300 * (i % 5)) for i in range(16)])
    base = simulate(rack(3), w, method="first_fit", **EXACT)
    again = simulate(
        rack(3), w, method="first_fit", queue="replay", replay_starts=str(_starts_csv(tmp_path, base)), **EXACT
    )
    assert {r["job"]: r["start_s"] for r in again.jobs} == pytest.approx({r["job"]: r["start_s"] for r in base.jobs})


def test_replay_starts_no_job_before_its_recorded_start_and_the_cli_needs_the_starts(tmp_path):
    from click.testing import CliRunner

    from placement.cli.main import cli
    from placement.errors import InvalidInputError

    w = jobs(("a", 0.0, 4, 1000), ("b", 1.0, 4, 10), ("c", 2.0, 4, 10))
    late = tmp_path / "late.csv"
    late.write_text("job,start_s\na,0\nb,500\nc,50\n")
    r = by_job(simulate(rack(3), w, method="first_fit", queue="replay", replay_starts=str(late), **EXACT))
    assert (r["a"]["start_s"], r["b"]["start_s"], r["c"]["start_s"]) == (0.0, 500.0, 50.0)  # woken at each
    with pytest.raises(InvalidInputError, match="replay_starts"):
        simulate(rack(3), w, method="first_fit", queue="replay", **EXACT)
    late.write_text("job,start_s\na,never\n")
    with pytest.raises(InvalidInputError, match="row 2"):
        simulate(rack(3), w, method="first_fit", queue="replay", replay_starts=str(late), **EXACT)
    trace = tmp_path / "t.csv"
    trace.write_text("submit_s,workers,duration_s\n0,1,100\n")
    res = CliRunner().invoke(
        cli, ["simulate", "tiny", "--trace", str(trace), "--queue", "replay", "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "replay_starts" in res.output and not (tmp_path / "o").exists()

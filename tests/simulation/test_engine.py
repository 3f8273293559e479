"""The online simulator: exact execution, the laws its dynamics must follow, conservation,
determinism, and the proactive loop's estimates."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from placement.errors import InvalidInputError
from placement.evaluation import evaluate
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.problem import cluster_of
from placement.problem.rules import comm_ms
from placement.simulation.dynamics import stationary
from placement.simulation.engine import SimConfig, simulate
from placement.simulation.workload import TraceJob, Workload

Z = 3.29
"""Normal quantile of the 99.9% two-sided confidence intervals the statistical checks use."""


def cluster(slowdowns: list[Slowdown], gpus: int = 1, rack_gbps: float = 100.0) -> Instance:
    servers = tuple(Server(f"s{i}", gpus, "A100", 2400.0, slowdown=d) for i, d in enumerate(slowdowns))
    links = tuple(Link(s.id, "tor", rack_gbps) for s in servers)
    return Instance("sim", servers, (), (Switch("tor"),), links)


def one_job(workers: int, iterations: int, compute_ms: float = 100.0, gradient_mb: float = 100.0) -> Workload:
    return Workload((TraceJob("j", 0.0, workers, iterations, compute_ms, gradient_mb),), "one job", {})


def test_one_job_without_stragglers_takes_iterations_times_the_ideal_time():
    c = cluster([Slowdown((1.0, 2.0), (0.5, 0.5))] * 4, gpus=2)
    r = simulate(c, one_job(4, 12_345), method="greedy", dynamics="none")
    (row,) = r.jobs
    servers = [s.split(":")[0] for s in row["placement"].split()]
    job_t0 = 100.0 + comm_ms(c.servers[0] and _job(4), cluster_of(c).bandwidth(servers), len(servers), {})
    assert row["jct_s"] == pytest.approx(12_345 * job_t0 / 1000.0, rel=1e-12)
    assert row["queue_s"] == 0.0 and row["slowdown"] == pytest.approx(1.0, rel=1e-12)
    assert r.summary["straggled_iteration_fraction"] == 0.0


def _job(workers: int):
    from placement.model import Job

    return Job("j", workers, 100.0, 100.0)


def test_static_jct_averages_to_iterations_times_the_evaluators_expected_time():
    d = Slowdown((1.0, 1.5, 3.0), (0.7, 0.2, 0.1))
    c = cluster([d] * 3)
    w = one_job(2, 1000)
    jcts, placements = [], set()
    for seed in range(300):
        r = simulate(c, w, method="greedy", knowledge="oracle", dynamics="static", seed=seed)
        jcts.append(r.jobs[0]["jct_s"])
        placements.add(r.jobs[0]["placement"])
    (placement,) = placements  # the oracle's placement does not depend on the seed
    asg = {"j": {p.split(":")[0]: int(p.split(":")[1]) for p in placement.split()}}
    inst = c.replace(jobs=(_job(2),))
    expected = 1000 * evaluate(inst, asg).jobs["j"].expected_iteration_ms / 1000.0
    x = np.array(jcts)
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert abs(x.mean() - expected) <= Z * se, (x.mean(), expected, se)


def _inverse_rate(c: Instance, servers: list[int], workers: int) -> float:
    """1 / E[1/T] over the stationary joint states of ``servers`` (independent), exactly."""
    comm = comm_ms(_job(workers), cluster_of(c).bandwidth([c.servers[i].id for i in servers]), len(servers), {})
    states = [
        stationary(np.asarray(c.servers[i].slowdown.values), np.asarray(c.servers[i].slowdown.probs)) for i in servers
    ]
    e_inv = 0.0
    for combo in itertools.product(*[list(zip(v, p)) for v, p in states]):
        p = math.prod(q for _, q in combo)
        t = max(100.0 * s for s, _ in combo) + comm
        e_inv += p / t
    return 1.0 / e_inv


@pytest.mark.parametrize("workers", [1, 2])
def test_markov_time_per_iteration_tends_to_the_inverse_mean_rate(workers):
    d = Slowdown((1.0, 2.0), (0.8, 0.2))
    c = cluster([d] * workers)
    iterations = 10_000_000  # ~1e6 s at the ideal speed: thousands of 30-s episodes
    per_iter = []
    for seed in range(6):
        r = simulate(
            c, one_job(workers, iterations), method="greedy", dynamics="markov", episode_median_s=30.0, seed=seed
        )
        per_iter.append(1000.0 * r.jobs[0]["run_s"] / iterations)
    x = np.array(per_iter)
    truth = _inverse_rate(c, list(range(workers)), workers)
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert abs(x.mean() - truth) <= Z * se + 1e-9 * truth, (x.mean(), truth, se)
    # and not E[T], which is larger (Jensen)
    inst = c.replace(jobs=(_job(workers),))
    e_t = evaluate(inst, {"j": {s.id: 1 for s in c.servers}}).jobs["j"].expected_iteration_ms
    assert e_t > truth and abs(x.mean() - e_t) > 10 * se


def test_every_job_finishes_once_and_no_server_is_over_committed():
    rng = np.random.default_rng(5)
    c = cluster([Slowdown((1.0, 3.0), (0.9, 0.1))] * 6, gpus=4)
    jobs = tuple(
        TraceJob(f"j{i}", float(10 * i), int(rng.choice([1, 2, 4, 8])), int(rng.integers(100, 5000)), 50.0, 20.0)
        for i in range(120)
    )
    r = simulate(c, Workload(jobs, "random", {}), method="greedy", dynamics="markov", episode_median_s=60.0, seed=2)
    assert sorted(row["job"] for row in r.jobs) == sorted(j.id for j in jobs)
    assert max(r.timeline["used_gpus"]) <= 24
    for row in r.jobs:
        assert row["end_s"] >= row["start_s"] >= row["submit_s"]
        assert sum(int(p.split(":")[1]) for p in row["placement"].split()) == row["workers"]
    # the same seed gives the same run; another seed another one
    again = simulate(c, Workload(jobs, "random", {}), method="greedy", dynamics="markov", episode_median_s=60.0, seed=2)
    assert again.jobs == r.jobs
    other = simulate(c, Workload(jobs, "random", {}), method="greedy", dynamics="markov", episode_median_s=60.0, seed=3)
    assert other.jobs != r.jobs


def test_estimated_knowledge_finds_the_persistent_stragglers():
    # the logs are relative to each job's median worker: jobs of several widths mix the servers
    d = Slowdown((1.0, 2.0), (0.75, 0.25))
    c = cluster([d] * 10)
    rng = np.random.default_rng(0)
    jobs = tuple(TraceJob(f"j{i}", float(50 * i), int(rng.integers(3, 7)), 3000, 100.0, 10.0) for i in range(400))
    r = simulate(
        c,
        Workload(jobs, "many", {}),
        method="greedy",
        knowledge="estimated",
        dynamics="static",
        estimate_every_s=300.0,
        seed=4,
    )
    slow = [s for s, v in r.truth_start.items() if v > 1.0]
    fast = [s for s, v in r.truth_start.items() if v == 1.0]
    assert slow and fast and r.iteration_log["job"]
    assert min(r.believed_mean[s] for s in slow) > max(r.believed_mean[s] for s in fast)


def test_the_proactive_scheduler_beats_the_oblivious_one_on_persistent_stragglers():
    hot, calm = Slowdown((1.0, 3.0), (0.4, 0.6)), Slowdown()
    c = cluster([hot, calm] * 5, gpus=2)
    jobs = tuple(TraceJob(f"j{i}", float(200 * i), 2, 2000, 100.0, 10.0) for i in range(60))
    runs = {
        k: simulate(c, Workload(jobs, "w", {}), method="greedy", knowledge=k, dynamics="static", seed=1)
        for k in ("oracle", "oblivious", "estimated")
    }
    assert runs["oracle"].summary["avg_jct_s"] < runs["oblivious"].summary["avg_jct_s"]
    # the estimates learn the hot servers from the first jobs' logs: within 5% of the oracle
    assert runs["estimated"].summary["avg_jct_s"] < 1.05 * runs["oracle"].summary["avg_jct_s"]


@pytest.mark.parametrize("plan_by", ["expected", "forecast"])
def test_estimates_never_lose_to_oblivious_on_persistent_stragglers_the_law_hides(plan_by):
    """Every server has the same law, so only the logs tell which 30% drew the slow value for
    good (static truth): on every seed the estimated scheduler is no worse than the oblivious
    one, and where the oblivious one hits a slow server (seeds 2 and 4) far better."""
    c = cluster([Slowdown((1.0, 3.0), (0.7, 0.3))] * 10, gpus=2)
    w = Workload(tuple(TraceJob(f"j{i}", float(300 * i), 2, 2000, 100.0, 10.0) for i in range(60)), "w", {})
    gaps = []
    for seed in (1, 2, 3, 4):
        jct = {
            k: simulate(
                c,
                w,
                method="greedy",
                knowledge=k,
                dynamics="static",
                seed=seed,
                plan_by=plan_by,
                estimate_every_s=100.0,
            ).summary["avg_jct_s"]
            for k in ("estimated", "oblivious")
        }
        assert jct["estimated"] <= jct["oblivious"] + 1e-6
        gaps.append(jct["oblivious"] - jct["estimated"])
    assert max(gaps) > 100.0


def test_bad_configurations_are_refused_with_every_problem():
    from placement.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as e:
        SimConfig(knowledge="psychic", dynamics="chaos", decision_time_limit_s=float("nan"), patience=-1.0)
    assert len(e.value.problems) == 4 and "patience" in e.value.problems[-1]
    c = cluster([Slowdown()] * 2)
    with pytest.raises(InvalidInputError, match="needs 8 GPUs; the cluster has 2"):
        simulate(c, one_job(8, 10), dynamics="none")


def test_replay_dynamics_are_followed_exactly(tmp_path):
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n100,s0,2.0\n200,s0,1.0\n")
    c = cluster([Slowdown()])
    r = simulate(c, one_job(1, 3000), dynamics="replay", replay_path=str(p))
    # 1000 iterations by t=100, 500 more at half speed by t=200, the last 1500 take 150 s
    assert r.jobs[0]["jct_s"] == pytest.approx(350.0, rel=1e-12)
    assert r.jobs[0]["straggled_iterations"] == pytest.approx(500.0, rel=1e-9)


def test_replanning_moves_a_job_off_a_server_found_slow(tmp_path):
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,3.0\n")
    c = cluster([Slowdown()] * 3)
    w = one_job(2, 20_000, gradient_mb=1.0)
    still = simulate(
        c,
        w,
        method="local_search",
        knowledge="estimated",
        dynamics="replay",
        replay_path=str(p),
        estimate_every_s=60.0,
        replan="off",
    )
    moved = simulate(
        c,
        w,
        method="local_search",
        knowledge="estimated",
        dynamics="replay",
        replay_path=str(p),
        estimate_every_s=60.0,
        replan_every_s=120.0,
        restart_s=30.0,
    )
    assert still.summary["migrations"] == 0 and moved.summary["migrations"] == 1
    assert "s0" in still.jobs[0]["placement"] and "s0" not in moved.jobs[0]["placement"]
    assert moved.jobs[0]["jct_s"] < still.jobs[0]["jct_s"]
    # the record of what each job held: one interval unmoved; moved, two that meet at the move
    (h,) = still.held
    assert (h["from_s"], h["to_s"], h["placement"]) == (0.0, still.jobs[0]["end_s"], still.jobs[0]["placement"])
    first, second = moved.held
    assert first["from_s"] == 0.0 and first["to_s"] == second["from_s"] > 0.0
    assert "s0" in first["placement"] and second["placement"] == moved.jobs[0]["placement"]
    assert second["to_s"] == moved.jobs[0]["end_s"]
    # the picture draws the job on s0 before the move only (without the record: all along)
    from placement.visual.timeline import occupancy

    servers = list(moved.truth_start)
    edges = np.linspace(0.0, moved.jobs[0]["end_s"], 101)
    cut = int(np.searchsorted(edges, first["to_s"])) - 1
    occ = occupancy(servers, moved.jobs, moved.held, edges)
    assert (occ[0, :cut] >= 0).all() and (occ[0, cut + 1 :] < 0).all()
    assert (occupancy(servers, moved.jobs, None, edges)[0] < 0).all()


@pytest.mark.parametrize("price", ["remaining", "gpu_time"])
def test_a_priced_re_plan_moves_a_job_only_when_its_remaining_work_repays_the_restart(tmp_path, price):
    """s0 turns 3x slow at t = 10 s under a 2-worker job of 20,000 iterations (about 2,000 s
    left at its old pace when the first re-plan comes at 120 s). Priced by its remaining work, a
    30 s restart is repaid and the job moves; a 100,000 s restart is not, and it stays, where
    the unpriced re-plan moves it anyway."""
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,3.0\n")
    c = cluster([Slowdown()] * 3)
    w = one_job(2, 20_000, gradient_mb=1.0)

    def run(price: str, restart_s: float):
        return simulate(
            c,
            w,
            method="local_search",
            knowledge="estimated",
            dynamics="replay",
            replay_path=str(p),
            estimate_every_s=60.0,
            replan_every_s=120.0,
            restart_s=restart_s,
            replan_price=price,
        )

    cheap, dear, blind = run(price, 30.0), run(price, 100_000.0), run("none", 100_000.0)
    assert cheap.summary["migrations"] == 1 and "s0" not in cheap.jobs[0]["placement"]
    assert dear.summary["migrations"] == 0 and "s0" in dear.jobs[0]["placement"]
    assert blind.summary["migrations"] >= 1
    assert dear.jobs[0]["jct_s"] < blind.jobs[0]["jct_s"]  # the blind move paid a restart it never earned back
    # the costs reported: two GPUs idle for the 30 s restart; re-plans timed apart
    assert cheap.summary["restart_gpu_hours"] == pytest.approx(2 * 30.0 / 3600.0)
    assert dear.summary["restart_gpu_hours"] == 0.0
    assert cheap.summary["replans"] >= 1 and cheap.summary["replan_time_p99_s"] is not None
    assert cheap.summary["top1pct_jct_share"] == 1.0  # one job carries all of it
    with pytest.raises(InvalidInputError, match="replan_price"):
        SimConfig(replan_price="always")


@pytest.mark.parametrize("scope", ["movers", "holders", "all"])
def test_an_incremental_re_plan_leaves_out_the_jobs_that_cannot_repay_a_move(tmp_path, monkeypatch, scope):
    """Three 2-GPU servers; s0, under the 2-worker job, turns 3x slow at t = 10 s. At the
    first re-plan (120 s) that job has about 2,000 s left and may repay a 60 s restart; the
    one-worker job has 30 s left and cannot, even on the best free GPU. ``movers`` keeps the
    latter out of the search on the GPU it holds; ``holders`` and ``all`` search it too (it
    holds half a server). Either way the job that could not repay never moves."""
    import placement.simulation.replanning as replanning

    searched: list[set[str]] = []
    real = replanning.solve

    def spy(inst, *args, **kwargs):
        if "previous" in kwargs:  # a re-plan
            searched.append({j.id for j in inst.jobs})
        return real(inst, *args, **kwargs)

    monkeypatch.setattr(replanning, "solve", spy)
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,3.0\n")
    c = cluster([Slowdown()] * 3, gpus=2)
    w = Workload((TraceJob("long", 0.0, 2, 20_000, 100.0, 1.0), TraceJob("tail", 0.0, 1, 1_500, 100.0, 1.0)), "two", {})
    r = simulate(
        c,
        w,
        method="local_search",
        knowledge="clairvoyant",
        dynamics="replay",
        replay_path=str(p),
        replan_every_s=120.0,
        restart_s=60.0,
        replan_scope=scope,
    )
    rows = {row["job"]: row for row in r.jobs}
    assert searched and all("long" in ids for ids in searched)
    if scope == "movers":
        assert all("tail" not in ids for ids in searched)
        assert r.summary["replan_pinned_share"] > 0
    else:
        assert "tail" in searched[0]
    assert rows["tail"]["moves"] == 0
    assert rows["long"]["moves"] >= 1 and "s0" not in rows["long"]["placement"]  # it left the slow server
    with pytest.raises(InvalidInputError, match="replan_scope"):
        SimConfig(replan_scope="some")


def test_profiled_ratios_let_a_lone_worker_inform_the_estimates(tmp_path):
    """Divided by the job's median worker, a one-worker job tells nothing (its ratio is always 1)
    and is not logged; divided by its profiled straggler-free time, it shows its server's
    slowdown: s0 at 3x gives ratios near 3."""
    import csv

    from placement.estimate.logs import estimate_from_ratios

    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n0,s0,3.0\n")
    c = cluster([Slowdown((1.0, 3.0), (0.9, 0.1))] * 2)
    w = one_job(1, 50_000)
    logged = {}
    for ratio_to in ("median", "profiled"):
        log = tmp_path / f"{ratio_to}.csv"
        r = simulate(
            c,
            w,
            method="greedy",
            knowledge="estimated",
            dynamics="replay",
            replay_path=str(p),
            estimate_every_s=60.0,
            ratio_to=ratio_to,
            log_path=str(log),
        )
        assert r.jobs[0]["placement"] == "s0:1"
        logged[ratio_to] = list(csv.DictReader(log.open()))
    assert logged["median"] == []
    rows = logged["profiled"]
    assert len(rows) >= 50 and {row["server"] for row in rows} == {"s0"}
    ratios = np.array([float(row["duration"]) / 100.0 for row in rows])
    assert np.median(ratios) == pytest.approx(3.0, rel=0.05)
    est, _ = estimate_from_ratios(
        np.zeros(len(ratios)), np.zeros(len(ratios)), np.arange(len(ratios)), ratios, servers=[0]
    )
    assert est[0].slowdown.mean() > 2.0


def test_planning_by_steady_rates_picks_the_server_a_long_job_runs_faster_on():
    # A: slow half of the time at 3x (E[S] = 2, steady rate 1/E[1/S] = 1.5); B: always 1.8x
    c = cluster([Slowdown((1.0, 3.0), (0.5, 0.5)), Slowdown((1.8,), (1.0,))])
    w = one_job(1, 2_000_000)  # 200,000 s: hundreds of 30-s-median episodes
    runs = {
        pb: simulate(c, w, method="greedy", dynamics="markov", episode_median_s=30.0, plan_by=pb, seed=1)
        for pb in ("expected", "rate", "duration")
    }
    assert runs["expected"].jobs[0]["placement"] == "s1:1"
    assert runs["rate"].jobs[0]["placement"] == "s0:1" and runs["duration"].jobs[0]["placement"] == "s0:1"
    assert runs["rate"].jobs[0]["jct_s"] < runs["expected"].jobs[0]["jct_s"]
    # a job too short to average over episodes keeps the E[T] view under "duration"
    short = simulate(
        c, one_job(1, 100), method="greedy", dynamics="markov", episode_median_s=30.0, plan_by="duration", seed=1
    )
    assert short.jobs[0]["placement"] == "s1:1"


def test_a_job_that_can_never_be_placed_is_named_instead_of_waiting_forever():
    from placement.errors import InvalidInputError

    c = cluster([Slowdown((1.0, 2.0), (0.9, 0.1))] * 2)
    w = Workload((TraceJob("h100-only", 0.0, 1, 10, 100.0, 1.0, gpu_speed={"H100": 1.0}),), "typed", {})
    with pytest.raises(InvalidInputError, match="'h100-only'"):
        simulate(c, w, method="greedy", dynamics="markov")


def test_clairvoyant_knowledge_sees_the_hidden_state_and_avoids_it():
    # static truth: the forecast is the drawn value for ever, so a clairvoyant scheduler puts
    # every job on the servers that drew 1.0 while there are enough of them; the law alone
    # (oracle) cannot tell the servers apart
    d = Slowdown((1.0, 4.0), (0.5, 0.5))
    c = cluster([d] * 12)
    w = Workload(tuple(TraceJob(f"j{i}", float(i * 5000), 2, 200, 100.0, 10.0) for i in range(6)), "spaced", {})
    oracle_hit_slow = 0
    for seed in range(6):
        r = simulate(c, w, method="greedy", knowledge="clairvoyant", dynamics="static", seed=seed)
        fast = {s for s, v in r.truth_start.items() if v == 1.0}
        if len(fast) < 2:
            continue
        for row in r.jobs:
            assert {p.split(":")[0] for p in row["placement"].split()} <= fast
            assert row["slowdown"] == pytest.approx(1.0)
        oracle = simulate(c, w, method="greedy", knowledge="oracle", dynamics="static", seed=seed)
        oracle_hit_slow += max(row["slowdown"] for row in oracle.jobs) > 1.0
    assert oracle_hit_slow >= 1


def _two_servers_one_slow(tmp_path, rows: str = "0,s1,3.0\n"):
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n" + rows)
    c = cluster([Slowdown()] * 2)
    short = TraceJob("short", 0.0, 1, 1000, 100.0, 1.0)  # 100 s on s0
    long = TraceJob("long", 1.0, 1, 20_000, 100.0, 1.0)  # arrives when only s1 (3x slow) is free
    return c, Workload((short, long), "two", {}), str(p)


def test_a_freed_event_moves_a_job_onto_the_gpus_a_finished_job_left(tmp_path):
    c, w, replay = _two_servers_one_slow(tmp_path)
    common = dict(
        method="local_search",
        knowledge="clairvoyant",
        dynamics="replay",
        replay_path=replay,
        restart_s=10.0,
        replan_every_s=None,
    )
    still = simulate(c, w, **common, replan="off")
    moved = simulate(c, w, **common, replan_events=("freed",))
    row = {r["job"]: r for r in moved.jobs}
    assert still.summary["migrations"] == 0 and {r["job"]: r for r in still.jobs}["long"]["placement"] == "s1:1"
    assert moved.summary["migrations"] == 1 and row["long"]["placement"] == "s0:1"
    assert row["long"]["jct_s"] < {r["job"]: r for r in still.jobs}["long"]["jct_s"]
    assert moved.summary["replans"] == 1  # one event: the short job's end


def test_an_estimate_event_re_plans_when_a_refit_finds_a_server_slow(tmp_path):
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,3.0\n")
    c = cluster([Slowdown()] * 3)
    w = one_job(2, 20_000, gradient_mb=1.0)
    common = dict(
        method="local_search",
        knowledge="estimated",
        dynamics="replay",
        replay_path=str(p),
        estimate_every_s=60.0,
        replan_every_s=None,
    )
    quiet = simulate(c, w, **common, replan="off")
    told = simulate(c, w, **common, replan_events=("estimate",), restart_s=5.0)
    assert quiet.summary["migrations"] == 0 and "s0" in quiet.jobs[0]["placement"]
    assert told.summary["migrations"] == 1 and "s0" not in told.jobs[0]["placement"]


def test_the_hourly_move_budget_caps_the_workers_re_plans_move(tmp_path):
    # s0 and s1 swap being slow every 200 s; an unpriced re-plan every 60 s chases them
    rows = "".join(f"{t},s{(t // 200) % 2},3.0\n{t},s{1 - (t // 200) % 2},1.0\n" for t in range(0, 7200, 200))
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n" + rows)
    c = cluster([Slowdown()] * 2)
    w = Workload((TraceJob("j", 0.0, 1, 60_000, 100.0, 1.0),), "one", {})
    common = dict(
        method="local_search", knowledge="clairvoyant", dynamics="replay", replay_path=str(p), replan_every_s=60.0
    )
    free = simulate(c, w, **common)
    capped = simulate(c, w, **common, move_budget_per_hour=1)
    hours = math.ceil(capped.jobs[0]["end_s"] / 3600.0)
    assert free.summary["migrations"] > 2 * hours
    assert 1 <= capped.summary["migrations"] <= hours
    with pytest.raises(InvalidInputError, match="move_budget_per_hour"):
        SimConfig(method="local_search", replan_every_s=60.0, move_budget_per_hour=0)
    with pytest.raises(InvalidInputError, match="replan_events"):
        SimConfig(method="local_search", replan_events=("sometimes",))
    with pytest.raises(InvalidInputError, match="re-planning needs a method"):
        SimConfig(method="greedy", replan_events=("freed",))


@pytest.mark.parametrize("method", ["greedy", "auto"])
def test_the_jct_objective_gives_the_long_job_the_fast_server(method):
    """Two one-GPU servers, one always twice as slow; a long job (10,000 iterations of 100 ms)
    and a short one (100 of 150 ms) arrive together.  By iteration time the short job's
    heavier iteration takes the fast server (100 + 2 x 150 > 2 x 100 + 150 ms); by JCT the long
    job does (10,000 x 100 + 100 x 300 < 10,000 x 200 + 100 x 150), halving the mean JCT."""
    c = cluster([Slowdown(), Slowdown((2.0,), (1.0,))])
    w = Workload(
        (TraceJob("long", 0.0, 1, 10_000, 100.0, 10.0), TraceJob("short", 0.0, 1, 100, 150.0, 10.0)),
        "two jobs",
        {},
    )
    rows = {}
    for objective in ("weighted_expected_iteration_time", "weighted_expected_jct"):
        r = simulate(c, w, method=method, knowledge="oracle", dynamics="static", objective=objective)
        rows[objective] = {row["job"]: row for row in r.jobs}
    by_it, by_jct = rows["weighted_expected_iteration_time"], rows["weighted_expected_jct"]
    assert by_it["long"]["placement"].startswith("s1") and by_it["long"]["jct_s"] == pytest.approx(2000.0)
    assert by_jct["long"]["placement"].startswith("s0") and by_jct["long"]["jct_s"] == pytest.approx(1000.0)
    assert by_jct["short"]["jct_s"] == pytest.approx(30.0) and by_it["short"]["jct_s"] == pytest.approx(15.0)
    with pytest.raises(InvalidInputError, match="objective must be one of"):
        simulate(c, w, method=method, objective="makespan")


@pytest.mark.parametrize("price", ["remaining", "amortized"])
def test_on_two_servers_a_priced_move_helps_where_an_unpriced_one_hurts(tmp_path, price):
    """Two one-GPU servers; a one-worker job of 100 ms iterations starts on s0, which turns 3x
    slow at t = 10 s; the re-plan at t = 120 s finds it at 100 + 110 / 0.3 = 466.67 iterations,
    and a move costs a 300 s restart.  Exact JCTs:

    - 1,000 iterations: 533.33 left save 533.33 x 0.2 = 106.67 s on s1, less than the restart.
      Priced, it stays: 120 + 533.33 x 0.3 = 280 s.  Unpriced, it moves: 120 + 300 + 53.33 = 473.33 s.
    - 20,000 iterations: 19,533.33 left save 3,906.67 s.  Priced, it moves:
      120 + 300 + 1,953.33 = 2,373.33 s, against 120 + 5,860 = 5,980 s staying."""
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,3.0\n")
    c = cluster([Slowdown()] * 2)
    common = dict(method="local_search", knowledge="clairvoyant", dynamics="replay", replay_path=str(p))

    repaid = []

    def jct(iterations: int, **kw) -> tuple[float, int]:
        w = Workload((TraceJob("j", 0.0, 1, iterations, 100.0, 1.0),), "one", {})
        r = simulate(c, w, **common, **kw)
        repaid.append(r.summary["moves_repaid_alone"])
        return r.jobs[0]["jct_s"], r.summary["migrations"]

    replan = dict(replan_every_s=120.0, restart_s=300.0)
    assert jct(1000, **replan, replan_price=price) == (pytest.approx(280.0), 0)
    assert jct(1000, **replan, replan_price="none") == (pytest.approx(473.333, abs=1e-2), 1)
    assert jct(20_000, **replan, replan_price=price) == (pytest.approx(2373.333, abs=1e-2), 1)
    assert repaid[-1] == (1 if price == "amortized" else 0)  # counted where the saving is priced per job
    assert jct(20_000, replan="off") == (pytest.approx(5980.0), 0)
    # on by default: hourly, a 300 s restart, amortized prices (the first re-plan at 3,600 s)
    assert jct(20_000)[1] == 1


def _fragments() -> Instance:
    """s0 and s1 have one free GPU each (the other is someone else's); s2 has two."""
    servers = (
        Server("s0", 2, "A100", 2400.0, used_gpus=1),
        Server("s1", 2, "A100", 2400.0, used_gpus=1),
        Server("s2", 2, "A100", 2400.0),
    )
    return Instance("frag", servers, (), (Switch("tor"),), tuple(Link(s.id, "tor", 100.0) for s in servers))


@pytest.mark.parametrize("iterations", [100_000, 10_000])
def test_patience_waits_for_a_whole_server_only_as_long_as_the_spread_start_would_lose(iterations):
    c = _fragments()
    # s2 is busy for 100 s; at t = 1 a 2-GPU job could start at once, spread over s0 and s1
    w = Workload(
        (TraceJob("z", 0.0, 2, 1000, 100.0, 100.0), TraceJob("c", 1.0, 2, iterations, 100.0, 100.0)),
        "fragments",
        {},
    )
    common = dict(method="greedy", knowledge="oblivious", dynamics="none")
    at_once = {r["job"]: r for r in simulate(c, w, **common).jobs}
    patient = {r["job"]: r for r in simulate(c, w, **common, patience=1.0).jobs}
    bw = cluster_of(c).bandwidth
    spread_ms = 100.0 + comm_ms(_job(2), bw(["s0", "s1"]), 2, {})
    whole_ms = 100.0 + comm_ms(_job(2), bw(["s2"]), 1, {})
    lose_s = iterations * (spread_ms - whole_ms) / 1000.0  # what the spread start adds to the run
    z_end = 1000 * whole_ms / 1000.0
    assert at_once["c"]["start_s"] == 1.0 and at_once["c"]["placement"] == "s0:1 s1:1"
    if lose_s > z_end - 1.0:  # worth waiting for s2: it starts there when z ends
        assert patient["c"]["start_s"] == pytest.approx(z_end, rel=1e-12)
        assert patient["c"]["placement"] == "s2:2"
        assert patient["c"]["jct_s"] < at_once["c"]["jct_s"]
    else:  # its patience runs out first: it starts spread, having waited what it would lose
        assert patient["c"]["start_s"] == pytest.approx(1.0 + lose_s, rel=1e-9)
        assert patient["c"]["placement"] == "s0:1 s1:1"
    assert patient["z"] == at_once["z"]


def test_patience_never_holds_a_job_when_nothing_runs_that_could_free_better_gpus():
    c = _fragments()
    w = Workload((TraceJob("c", 0.0, 3, 100_000, 100.0, 100.0),), "alone", {})
    (row,) = simulate(c, w, method="greedy", knowledge="oblivious", dynamics="none", patience=5.0).jobs
    assert row["start_s"] == 0.0


def test_patience_is_on_by_default_only_in_the_proactive_loop():
    from placement.simulation.config import PATIENCE

    assert SimConfig(method="auto", knowledge="estimated").wait_factor == PATIENCE > 0
    assert SimConfig(method="auto", replan="off").wait_factor == 0.0  # placement at arrival only
    assert SimConfig(method="consolidate").wait_factor == 0.0  # baselines start jobs as soon as they fit
    assert SimConfig(method="consolidate", patience=0.5).wait_factor == 0.5


@pytest.mark.parametrize("waiting", [False, True])
def test_the_move_margin_holds_while_no_job_waits_and_not_while_jobs_wait(tmp_path, waiting):
    """s0, under a 2-worker job of 20,000 iterations, turns 1.03x slow at t = 10 s: a move
    to the free s2 at the first re-plan (120 s) saves about 3% of the ~2,000 s left, which
    repays a 30 s restart but not a 5% margin.  With no job waiting the margin holds and the
    job stays; with a 3-GPU job waiting for its GPUs (the queue counts: ending the running
    job sooner starts it sooner) the margin while jobs wait (none) applies and it moves."""
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n10,s0,1.03\n")
    c = cluster([Slowdown()] * 3)
    jobs = [TraceJob("j", 0.0, 2, 20_000, 100.0, 1.0)]
    if waiting:
        jobs.append(TraceJob("wide", 1.0, 3, 100, 100.0, 1.0))
    r = simulate(
        c,
        Workload(tuple(jobs), "margin", {}),
        method="local_search",
        knowledge="clairvoyant",
        dynamics="replay",
        replay_path=str(p),
        replan_every_s=120.0,
        restart_s=30.0,
        move_margin=0.05,
        queued_move_margin=0.0,
    )
    row = next(j for j in r.jobs if j["job"] == "j")
    assert ("s0" in row["placement"]) is not waiting
    assert r.summary["migrations"] == int(waiting)


def test_the_move_margins_in_force():
    est = SimConfig(knowledge="estimated")
    assert (est.margin(queued=False), est.margin(queued=True)) == (0.05, 0.0)
    assert SimConfig(knowledge="oracle").margin(queued=False) == 0.0
    assert SimConfig(knowledge="estimated", move_margin=0.1).margin(queued=True) == 0.1  # given: both
    both = SimConfig(knowledge="estimated", move_margin=0.1, queued_move_margin=0.02)
    assert (both.margin(queued=False), both.margin(queued=True)) == (0.1, 0.02)
    with pytest.raises(InvalidInputError, match="queued_move_margin"):
        SimConfig(queued_move_margin=-1.0)


def test_a_locality_penalty_slows_a_spread_job_and_decisions_know_it():
    """``comm="penalty:F"`` (Blox's and PAL's semantics): communication is free, but a job on two or
    more servers runs F times slower; the decisions solve under the same penalty."""
    c = cluster([Slowdown()] * 3, gpus=4)
    wide = simulate(c, one_job(8, 1_000), method="greedy", dynamics="none", comm="penalty:1.7")
    (row,) = wide.jobs
    assert row["jct_s"] == pytest.approx(1.7 * 1_000 * 100.0 / 1000.0, rel=1e-12)
    assert row["slowdown"] == pytest.approx(1.0, rel=1e-12)  # the penalty is part of its ideal time
    free = simulate(c, one_job(8, 1_000), method="greedy", dynamics="none", comm="off")
    assert free.jobs[0]["jct_s"] == pytest.approx(100.0, rel=1e-12)
    # two 2-worker jobs and a 4-worker one on three 4-GPU servers: under the penalty nobody spreads
    jobs = tuple(TraceJob(f"j{k}", 0.0, w, 1_000, 100.0, 0.0) for k, w in enumerate((2, 2, 4)))
    r = simulate(c, Workload(jobs, "three", {}), method="auto", dynamics="none", comm="penalty:1.7")
    assert all(len(row["placement"].split()) == 1 for row in r.jobs)
    with pytest.raises(InvalidInputError, match="penalty:F"):
        simulate(c, one_job(8, 10), method="greedy", dynamics="none", comm="penalty:0.5")


def test_hidden_per_gpu_factors_slow_the_workers_on_them_and_oracle_decisions_avoid_them(tmp_path):
    """Per-GPU factors in the truth: a worker on GPU g runs a f_g S; with oracle knowledge the
    decisions see the factors and choose GPUs, without it the lowest free indices are taken."""
    servers = (
        Server("s0", 2, "A100", 2400.0, gpu_slowdowns={"*": (1.5, 1.0)}),
        Server("s1", 2, "A100", 2400.0, gpu_slowdowns={"*": (1.0, 1.2)}),
    )
    c = Instance("f", servers, (), (Switch("t"),), tuple(Link(s.id, "t", 100.0) for s in servers))
    w = Workload(tuple(TraceJob(j, 0.0, 1, 1_000, 100.0, 0.0) for j in "ab"), "two", {})
    oracle = simulate(c, w, method="auto", knowledge="oracle", dynamics="none")
    assert sorted(row["jct_s"] for row in oracle.jobs) == pytest.approx([100.0, 100.0], rel=1e-12)
    blind = simulate(c, w, method="auto", knowledge="oblivious", dynamics="none")
    assert max(row["jct_s"] for row in blind.jobs) > 100.0 * 1.19
    # the same factors from a profile, laid out by the run's seed
    prof = tmp_path / "p.csv"
    prof.write_text("server,gpu,class,perf\n" + "".join(f"x{k},0,a,{v}\n" for k, v in enumerate((10, 10, 10, 30))))
    for seed in range(4):  # oracle knowledge is given them, wherever the seed lays the slow GPU
        laid = simulate(
            cluster([Slowdown()] * 4),
            one_job(1, 1_000, gradient_mb=0.0),
            method="auto",
            dynamics="none",
            knowledge="oracle",
            variability=(str(prof),),
            seed=seed,
        )
        assert laid.jobs[0]["jct_s"] == pytest.approx(100.0)

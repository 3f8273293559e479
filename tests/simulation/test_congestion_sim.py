"""Congested domains in the simulator's hidden truth: a job crossing a congested domain runs its
communication L times slower, exactly; domains move with the dynamics; only the truth's knowledge
sees their laws."""

from __future__ import annotations

import pytest

from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.model.records import NO_SLOWDOWN
from placement.simulation import simulate
from placement.simulation.workload import TraceJob, Workload

ITER, COMPUTE, GRAD = 1000, 100.0, 50.0


def racks(core: Slowdown, gpus: int = 1, rack1: Slowdown = NO_SLOWDOWN, rack0: Slowdown = NO_SLOWDOWN) -> Instance:
    """Two racks of two ``gpus``-GPU servers (100 Gbit/s) under a core (25 Gbit/s)."""
    servers = tuple(Server(f"s{i}", gpus, "V100", 300.0) for i in range(4))
    links = tuple(Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)) + (Link("r0", "c", 25.0), Link("r1", "c", 25.0))
    return Instance("racks", servers, (), (Switch("c", core), Switch("r0", rack0), Switch("r1", rack1)), links)


def one_job(workers: int) -> Workload:
    return Workload((TraceJob("a", 0.0, workers, ITER, COMPUTE, GRAD),), "one job", {})


def ring(workers: int, gbps: float) -> float:
    return 2 * (workers - 1) / workers * 8 * GRAD / gbps


def test_a_job_across_a_congested_core_runs_its_all_reduce_l_times_slower():
    """Four 1-GPU servers: a 3-worker job spans both racks and crosses the core (L = 2 for
    ever under ``static``); under ``none`` the congestion never shows."""
    cl = racks(Slowdown((2.0,), (1.0,)))
    calm = simulate(cl, one_job(3), method="consolidate", dynamics="none", seed=0)
    hot = simulate(cl, one_job(3), method="consolidate", dynamics="static", seed=0)
    c = ring(3, 25.0)
    assert calm.summary["avg_jct_s"] == pytest.approx(ITER * (COMPUTE + c) / 1000)
    assert hot.summary["avg_jct_s"] == pytest.approx(ITER * (COMPUTE + 2 * c) / 1000)


def test_domains_move_in_episodes_and_are_logged_by_their_switches():
    """Under ``markov`` the core's L alternates (half the time at 3): the changes are logged under
    ``domain:c``, and each job's run lies between all calm and all congested."""
    cl = racks(Slowdown((1.0, 3.0), (0.5, 0.5)))
    w = Workload(tuple(TraceJob(f"j{k}", 600.0 * k, 3, 20 * ITER, COMPUTE, GRAD) for k in range(6)), "six jobs", {})
    r = simulate(cl, w, method="consolidate", dynamics="markov", seed=1)
    assert "domain:c" in set(r.slowdown_changes["server"])
    c = ring(3, 25.0)
    runs = [j["run_s"] for j in r.jobs]
    lo, hi = 20 * ITER * (COMPUTE + c) / 1000, 20 * ITER * (COMPUTE + 3 * c) / 1000
    assert all(lo * (1 - 1e-9) <= x <= hi * (1 + 1e-9) for x in runs)
    assert lo * 1.01 < sum(runs) / len(runs) < hi * 0.99


def test_only_the_truths_knowledge_sees_congestion():
    """Two 4-GPU servers per rack, rack 1's switch always at L = 3: a 6-worker job spans two
    servers; given the truth it goes to rack 0, blind it takes rack 1 (its tie-break) and pays."""
    cl = racks(NO_SLOWDOWN, gpus=4, rack1=Slowdown((3.0,), (1.0,)))
    seen = simulate(cl, one_job(6), method="auto", knowledge="oracle", dynamics="static", seed=0)
    blind = simulate(cl, one_job(6), method="auto", knowledge="oblivious", dynamics="static", seed=0)
    c = ring(6, 100.0)
    assert seen.summary["avg_jct_s"] == pytest.approx(ITER * (COMPUTE + c) / 1000)
    assert blind.summary["avg_jct_s"] == pytest.approx(ITER * (COMPUTE + 3 * c) / 1000)


@pytest.mark.parametrize("kind", ["hybrid", "ps"])
def test_every_architecture_runs_at_the_evaluators_time_on_congested_domains(kind):
    """Every switch at L = 1.5 for ever (``static``, point laws) and no server slowdown: each job
    runs its iterations at the evaluator's E[T] of its placement on the congested instance, all-reduce,
    parameter-server and hybrid alike (their transfers between servers 1.5 times slower)."""
    import dataclasses

    import placement
    from placement.instances.generate import generate
    from placement.model import Job
    from placement.simulation.workload import apply_options

    base = generate(racks=2, servers_per_rack=2, gpus_per_server=4, jobs=1, seed=3, hot_fraction=0.0)
    cluster = base.replace(
        servers=tuple(dataclasses.replace(s, slowdown=NO_SLOWDOWN) for s in base.servers),
        switches=tuple(dataclasses.replace(w, congestion=Slowdown((1.5,), (1.0,))) for w in base.switches),
    )
    jobs = [TraceJob(f"t{k}", 10.0 * k, w, 500, 80.0 + 10 * k, 300.0) for k, w in enumerate([8, 4, 2, 8, 1, 4, 6])]
    opts = {"hybrid_fraction": 1.0, "hybrid_seed": 2, "most_gpus": 4} if kind == "hybrid" else {"ps_fraction": 0.6}
    w = apply_options(jobs, **opts)
    r = simulate(cluster, w, method="greedy", dynamics="static", seed=4)
    assert r.summary["jobs_finished"] == len(jobs)
    by_id = {j.id: j for j in w.jobs}
    slowed = 0
    for row in r.jobs:
        tj = by_id[row["job"]]
        x = {s: int(k) for s, k in (p.split(":") for p in row["placement"].split())}
        stages = tuple(tuple(s_.split(",")) for s_ in row["stages"].split("|")) if row.get("stages") else None
        shards = {s: int(k) for s, k in (p.split(":") for p in row["shards"].split())} if row.get("shards") else None
        fields = {k: getattr(tj, k) for k in ("tp", "pp", "dp", "microbatches", "activation_mb", "ps_shards")}
        job = Job(tj.id, tj.workers, tj.compute_ms, tj.gradient_mb, architecture=tj.architecture, **fields)
        one = cluster.replace(jobs=(job,))
        t = placement.evaluate(
            one, {tj.id: x}, shards={tj.id: shards} if shards else None, stages={tj.id: stages} if stages else None
        ).jobs[tj.id]
        assert row["run_s"] == pytest.approx(tj.iterations * t.expected_iteration_ms / 1000.0, rel=1e-9), row
        slowed += t.expected_iteration_ms > t.ideal_iteration_ms * (1 + 1e-9)
    assert slowed  # some job crossed a congested domain


def test_estimated_knowledge_learns_a_hot_link_from_the_jobs_paces():
    """Rack 1's switch always at L = 3, nothing else slow.  Blind at first, the loop puts a
    6-worker job on rack 1 (its tie-break, as the oblivious run does for good); the job's pace
    shows the congestion, so the loop moves it to rack 0 within the hour, and the next job starts
    there and runs at no congestion."""
    from placement.simulation.congestion_book import CongestionLearner

    cl = racks(NO_SLOWDOWN, gpus=4, rack1=Slowdown((3.0,), (1.0,)))
    grad = 500.0  # an all-reduce of two fifths of the step: the paces say something about the links
    jobs = (TraceJob("a", 0.0, 6, 40_000, COMPUTE, grad), TraceJob("b", 20_000.0, 6, 10_000, COMPUTE, grad))
    r = simulate(cl, Workload(jobs, "two", {}), method="auto", knowledge="estimated", dynamics="static", seed=0)
    racks_of = [(h["job"], {p.split(":")[0] for p in h["placement"].split()}) for h in r.held]
    assert racks_of == [("a", {"s2", "s3"}), ("a", {"s0", "s1"}), ("b", {"s0", "s1"})]
    assert next(h for h in r.held if h["job"] == "a")["to_s"] <= 3600.0
    c = 2 * (6 - 1) / 6 * 8 * grad / 100.0
    run = {j["job"]: j["run_s"] for j in r.jobs}
    assert run["b"] == pytest.approx(10_000 * (COMPUTE + c) / 1000)
    blind = simulate(cl, Workload(jobs, "two", {}), method="auto", knowledge="oblivious", dynamics="static", seed=0)
    assert sum(j["run_s"] for j in blind.jobs) > 1.2 * sum(run.values())
    # with nothing congested, every look reads 1 and no law is believed
    calm = CongestionLearner(racks(NO_SLOWDOWN, gpus=4), seed=0, window_ticks=100)
    assert calm.laws() == {}


def test_the_learners_half_life_sets_how_long_a_hot_period_is_believed(monkeypatch):
    """A rack hot for its first ten ticks and calm for the next thirty: with the default
    half-life (12 ticks) the learner believes it congested an eighth of the time; with ``link_half_life_ticks
    = None`` every look of the window weighs alike: a quarter of them congested; the
    simulator hands the config's half-life to its learner."""
    import math

    import placement.simulation.engine as engine
    from placement.errors import InvalidInputError
    from placement.simulation.config import SimConfig
    from placement.simulation.congestion_book import CongestionLearner

    cl = racks(NO_SLOWDOWN, gpus=4)
    rows = [(t, 1, 3.0 if t <= 10 else 1.0) for t in range(1, 41)]
    laws = {}
    for h in (12.0, math.inf):
        lr = CongestionLearner(cl, seed=0, window_ticks=100, half_life_ticks=h)
        lr.rows, lr.tick = list(rows), 40
        laws[h] = next(iter(lr.laws().values()))

    def share(d: Slowdown) -> float:
        return sum(p for v, p in zip(d.values, d.probs) if v > 1.0)

    assert share(laws[12.0]) < 0.15 and share(laws[math.inf]) == pytest.approx(0.25)
    seen = []
    real = CongestionLearner.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        seen.append(self.half_life)

    monkeypatch.setattr(engine.CongestionLearner, "__init__", spy)
    for h in (None, 6.0):
        simulate(cl, one_job(2), method="auto", knowledge="estimated", dynamics="none", link_half_life_ticks=h)
    assert seen == [math.inf, 6.0]
    with pytest.raises(InvalidInputError, match="link_half_life_ticks"):
        SimConfig(link_half_life_ticks=0.0)

"""Per-GPU factors learnt online (``estimated`` knowledge): each worker's logged time shows its
own GPU's factor, the learner ranks the GPUs it saw as the hidden factors do, and decisions that
learn them stop landing on a slow GPU a blind scheduler keeps taking."""

from __future__ import annotations

import numpy as np
import pytest

from placement.model import Instance, Link, Server, Switch
from placement.simulation.engine import simulate
from placement.simulation.gpu_book import GpuBook, GpuLearner
from placement.simulation.workload import TraceJob, Workload


def _cluster(factors: list[list[float]]) -> Instance:
    servers = tuple(
        Server(f"s{i}", len(f), "V100", 2400.0, gpu_slowdowns={"*": tuple(f)}) for i, f in enumerate(factors)
    )
    return Instance("g", servers, (), (Switch("t"),), tuple(Link(s.id, "t", 100.0) for s in servers))


def _spaced(n: int, workers: int = 1, every_s: float = 3_000.0, iterations: int = 20_000) -> Workload:
    jobs = tuple(TraceJob(f"j{i}", i * every_s, workers, iterations, 100.0, 0.0) for i in range(n))
    return Workload(jobs, "spaced", {})


def test_each_worker_is_seen_at_its_own_gpu_and_the_learner_keeps_per_class_factors():
    c = _cluster([[1.0, 1.5, 1.2, 1.0]])
    book = GpuBook(c, knows_factors=False)
    book.take("a", None, {0: 3}, {0: (0, 1, 2)})
    gpus, own, star = book.per_worker("a", np.array([0, 0, 0]), None)
    assert gpus.tolist() == [0, 1, 2] and own.tolist() == [1.0, 1.5, 1.2] and star.tolist() == [1.5] * 3
    learner = GpuLearner(c)
    for _ in range(50):
        d = learner.observe(
            book,
            TraceJob("a", 0.0, 3, 10, 100.0, 0.0),
            np.array([0, 0, 0]),
            np.full(3, 150.0),
            np.ones(3),
            np.ones(1),
            0.0,
        )
    assert d.tolist() == pytest.approx([100.0, 150.0, 120.0])
    f = learner.factors()[0]["*"]
    assert f[3] == 1.0  # never seen: the median GPU's
    assert f[0] < f[2] < f[1] and f[1] == pytest.approx(1.5 ** (50 / 52))
    assert learner.rank_corr() == pytest.approx(1.0)


def test_estimated_knowledge_learns_the_gpus_it_saw_and_ranks_them():
    hidden = [[1.0, 1.3], [0.9, 1.1], [1.2, 0.95], [1.05, 1.15]]
    r = simulate(
        _cluster(hidden),
        _spaced(12, workers=8, every_s=2_500.0),
        method="greedy",
        knowledge="estimated",
        dynamics="none",
    )
    assert r.summary["gpu_rank_corr"] == pytest.approx(1.0)
    assert "gpu_rank_corr" not in simulate(_cluster(hidden), _spaced(2), method="greedy", dynamics="none").summary


def test_learning_the_factors_steers_jobs_off_a_slow_gpu_a_blind_scheduler_keeps_taking():
    # GPU 0 of each server is 3x slow: a device plugin blind to factors hands it out first
    c = _cluster([[3.0, 1.0], [3.0, 1.0]])
    w = _spaced(6, every_s=7_000.0)  # one job at a time
    blind = simulate(c, w, method="auto", knowledge="oblivious", dynamics="none")
    learnt = simulate(c, w, method="auto", knowledge="estimated", dynamics="none")
    slow_blind = sum(row["jct_s"] > 2_500.0 for row in blind.jobs)
    slow_learnt = sum(row["jct_s"] > 2_500.0 for row in learnt.jobs)
    assert slow_blind == 6  # the lowest free index, every time
    assert slow_learnt <= 2  # only the jobs that showed each server's slow GPU
    assert learnt.summary["avg_jct_s"] < 0.6 * blind.summary["avg_jct_s"]

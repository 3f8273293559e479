"""The work clock: a time limit counted in budget checks, so that the heuristics stop after the
same steps whatever the machine's load, and a solve (and a simulation) is repeatable."""

from __future__ import annotations

import itertools
import time

import pytest

import placement
from placement.simulation.engine import simulate
from placement.simulation.workload import read_trace
from placement.solving.budget import Budget, WorkClock


def test_a_work_clock_advances_one_tick_per_check_and_never_reads_the_wall():
    clock = WorkClock(tick_s=0.01)
    b = Budget.seconds(0.025, clock)
    assert [b.expired() for _ in range(4)] == [False, False, True, True]
    assert clock.checks == 4 and b.left() == 0.0  # left() is a check too
    half = Budget.seconds(1.0, clock).share(0.5)
    assert half.clock is clock and half.end == pytest.approx(clock.t + 0.5 - 0.005, abs=1e-9)
    assert Budget.seconds(1.0, clock).before(0.25).end == pytest.approx(clock.t + 0.75, abs=1e-9)


def test_a_solve_on_the_work_clock_is_the_same_however_slow_the_machine(monkeypatch):
    # best-effort admission: no LP in auto's path (an LP or MILP that hits its limit stops on the wall)
    inst = placement.load_bundled("pod256").replace(admission="best_effort")
    kw = dict(time_limit_s=0.3, seed=3, prove=False, clock="work")
    first = placement.solve(inst, "auto", **kw)
    # a machine where every reading of the wall clock is a second later than the last
    ticks = itertools.count()
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + next(ticks))
    again = placement.solve(inst, "auto", **kw)
    assert again.assignment == first.assignment and again.objective == first.objective
    # on the wall clock the same machine leaves no time for the search
    rushed = placement.solve(inst, "auto", time_limit_s=0.3, seed=3, prove=False)
    assert rushed.status.has_placement
    with pytest.raises(ValueError, match="'clock' parameter of solve must be one of wall, work"):
        placement.solve(inst, "auto", clock="cpu")


def test_a_simulation_on_the_work_clock_repeats_exactly():
    cluster = placement.load_bundled("pod256")
    trace = read_trace("elasticflow-cluster04", window_start_s=28 * 86400, window_s=4 * 3600)
    runs = [
        simulate(cluster, trace, method="auto", knowledge="estimated", seed=1, decision_clock="work") for _ in range(2)
    ]
    strip = [{k: v for k, v in r.summary.items() if "time" not in k and k != "wall_s"} for r in runs]
    assert strip[0] == strip[1]
    assert [j["placement"] for j in runs[0].jobs] == [j["placement"] for j in runs[1].jobs]

"""Native solvers under Ctrl-C: a CP-SAT solve stops and the interrupt goes on (CP-SAT would
otherwise catch SIGINT itself and let a loop of solves carry on)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from ortools.sat.python import cp_model

from placement.formulations.quiet import interruptible_cpsat


def _long_model() -> cp_model.CpModel:
    """A model CP-SAT does not close in seconds (it runs to its time limit)."""
    m = cp_model.CpModel()
    xs = [m.new_int_var(0, 100, f"x{i}") for i in range(60)]
    m.add_all_different(xs)
    for i in range(0, 58, 2):
        m.add(xs[i] + xs[i + 1] != 100)
    m.maximize(sum((i % 7 + 1) * x for i, x in enumerate(xs)))
    return m


def _solver(limit_s: float) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = limit_s
    s.parameters.num_workers = 1
    return s


def _interrupt_in(seconds: float) -> threading.Timer:
    t = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_stops_a_loop_of_solves_at_once():
    m = _long_model()
    solves = 0
    timer = _interrupt_in(0.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in range(40):  # 40 x 0.3 s: with CP-SAT's own handler the loop ran to the end
                interruptible_cpsat(_solver(0.3), m)
                solves += 1
    finally:
        timer.cancel()
    assert solves < 10 and time.monotonic() - t0 < 5


def test_ctrl_c_stops_a_long_solve_within_its_cancel_wait():
    m = _long_model()
    timer = _interrupt_in(0.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            interruptible_cpsat(_solver(30), m)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 5  # not the 30-s limit


def test_an_uninterrupted_solve_answers_as_cp_sat_does():
    m = cp_model.CpModel()
    x = m.new_int_var(0, 10, "x")
    m.add(x != 7)
    m.maximize(x)
    s = _solver(5)
    assert interruptible_cpsat(s, m) == cp_model.OPTIMAL and s.value(x) == 10
    assert s.parameters.catch_sigint_signal is False
    bad = cp_model.CpModel()
    y = bad.new_int_var(0, 1, "y")
    bad.add(y > 1)
    assert interruptible_cpsat(_solver(5), bad) == cp_model.INFEASIBLE


def test_off_the_main_thread_the_solve_runs_there():
    m = cp_model.CpModel()
    x = m.new_int_var(0, 3, "x")
    m.maximize(x)
    got: list[tuple[int, str]] = []

    def solve() -> None:
        s = _solver(5)
        got.append((interruptible_cpsat(s, m), threading.current_thread().name))

    th = threading.Thread(target=solve, name="caller")
    th.start()
    th.join()
    assert got == [(cp_model.OPTIMAL, "caller")]

"""Living with native solvers: their banners kept off the process's stdout (the CLI writes JSON
there), and HiGHS and CP-SAT runs that Ctrl-C stops (the interrupt reaches Python at once and
goes on as ``KeyboardInterrupt``: a simulation or sweep stops, it does not carry on with one
decision cut short)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "native_stdout_silenced",
    "interruptible_run",
    "interruptible_cpsat",
    "native_solve_interrupted",
    "CANCEL_WAIT_S",
]


@contextlib.contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Point file descriptor 1 at the null device while native code runs (HiGHS prints a banner
    on creation whatever its options say)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real fd 1 (e.g. under some test runners)
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


CANCEL_WAIT_S = 1.0
"""How long an interrupted solve waits for HiGHS to stop before the interrupt goes on."""


def interruptible_run(h: Any) -> None:
    """``h.run()`` in HiGHS's own thread, so that Ctrl-C reaches Python at once: the solve is
    cancelled and the interrupt raised again within ``CANCEL_WAIT_S`` (HiGHS otherwise holds
    it until it stops by itself)."""
    h.HandleUserInterrupt = True  # HiGHS checks a cancel flag at its interrupt points
    h.startSolve()
    try:
        while not h.wait(0.1)[0]:
            pass
    except KeyboardInterrupt:
        h.cancelSolve()
        # HiGHS honours the cancel at its next interrupt point; if that is not within a
        # second, its solve goes on in its own thread.  Either way the Highs object is kept
        # alive: destroying it (or exiting normally) with its solve thread not joined aborts
        # the process ("terminate called without an active exception")
        h.wait(CANCEL_WAIT_S)
        _INTERRUPTED.append(h)
        raise


_INTERRUPTED: list[Any] = []
"""HiGHS solves cancelled by an interrupt (see :func:`native_solve_interrupted`)."""


def native_solve_interrupted() -> bool:
    """Whether a HiGHS solve was interrupted in this process: it must then end with
    ``os._exit`` (a normal exit destroys the solver with its solve thread not joined, and
    C++ aborts the process)."""
    return bool(_INTERRUPTED)


def interruptible_cpsat(solver: Any, model: Any) -> Any:
    """``solver.solve(model)`` such that Ctrl-C stops it and is raised again here.

    CP-SAT catches SIGINT itself by default (``catch_sigint_signal``): it ends the search as if
    the time limit had come and the interrupt never reaches Python, so a loop of solves (a
    simulation's decisions) would go on.  Here CP-SAT leaves the signal alone and solves in its
    own thread while this one waits, interruptibly; on ``KeyboardInterrupt`` the search is
    stopped (``stop_search``, honoured within milliseconds) and the interrupt goes on.  Off the
    main thread (no signal arrives there) the solve runs directly."""
    solver.parameters.catch_sigint_signal = False
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model)
    out: list[Any] = []
    failed: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            out.append(solver.solve(model))
        except BaseException as e:  # handed to the waiting thread
            failed.append(e)
        finally:
            done.set()

    threading.Thread(target=run, name="cp-sat", daemon=True).start()
    try:
        # an Event, not Thread.join: a join cut by KeyboardInterrupt can report a live thread dead
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        solver.stop_search()
        with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: the first one goes on
            done.wait(CANCEL_WAIT_S)
        raise
    if failed:
        raise failed[0]
    return out[0]

"""Living with native solvers: their banners kept off the process's stdout (the CLI writes JSON
there), and HiGHS runs that Ctrl-C can stop."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["native_stdout_silenced", "interruptible_run", "native_solve_interrupted", "CANCEL_WAIT_S"]


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

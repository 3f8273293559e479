"""Keep native solver banners off the process's stdout (the CLI writes JSON there)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["native_stdout_silenced"]


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

"""How an isolated worker process starts: the parent's interpreter and the parent's copy of
this package, wherever the parent was started from.

``python -m module`` puts the working folder first on ``sys.path``, so a worker started in a
checkout imported the checkout's sources even when the parent ran an installed copy (or an
older checkout, or another project's ``placement`` folder).  A worker here is ``python -c
BOOT``: the bootstrap sets ``sys.path`` to the parent's, as :mod:`multiprocessing` does for the
processes it spawns (so the worker imports what the parent would: this package, and a user's
``module:function`` method), imports the package, checks that it is the parent's copy (the same
folder), and only then runs the worker module.  :func:`check_workers` starts one such process
that imports the worker modules and nothing more, so that a sweep whose workers cannot start
fails at once, with the worker's own message, before any of its runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence

from placement.errors import WorkerStartError

__all__ = ["package_folder", "worker_command", "check_workers", "WRONG_PACKAGE_EXIT"]

WRONG_PACKAGE_EXIT = 97
"""The bootstrap's exit code when the worker imported a copy of the package other than the parent's."""

_BOOT = f"""\
import importlib, json, os, runpy, sys
path, expected, module, mode = sys.argv[1:5]
del sys.argv[1:5]
sys.path[:] = json.loads(path)
import placement
found = os.path.realpath(os.path.dirname(placement.__file__))
if found != expected:
    sys.stderr.write(
        "the worker imported placement from " + found + ", not the parent's copy at " + expected + "\\n"
    )
    sys.exit({WRONG_PACKAGE_EXIT})
if mode == "check":
    for name in module.split(","):
        importlib.import_module(name)
else:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def package_folder() -> str:
    """The folder of the package this process imported (``.../placement``), resolved: the
    folder above this module's."""
    return os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def worker_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``python -m module args...`` with this process's
    interpreter and this process's copy of the package."""
    return [sys.executable, "-c", _BOOT, json.dumps(sys.path), package_folder(), module, "run", *args]


def check_workers(modules: Sequence[str], timeout_s: float = 120.0) -> None:
    """Start one worker process that imports ``modules`` (this process's interpreter and
    package) and exits; raise :class:`WorkerStartError` with its message if it cannot."""
    pkg = package_folder()
    cmd = [sys.executable, "-c", _BOOT, json.dumps(sys.path), pkg, ",".join(modules), "check"]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise WorkerStartError(
            f"a worker process did not import {', '.join(modules)} within {timeout_s:g} s; no run was started"
        ) from None
    except OSError as e:
        raise WorkerStartError(f"cannot start a worker process ({sys.executable}): {e}; no run was started") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit code {proc.returncode}"
        raise WorkerStartError(
            f"the sweep's worker processes cannot start with this interpreter ({sys.executable}) "
            f"and this copy of placement ({pkg}): {why}; no run was started"
        )

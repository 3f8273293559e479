"""One sweep at a time per output folder.

Two sweeps writing into one folder (two terminals, or a resume started while the first still
runs) would each run every configuration and append its rows to the same ``runs.jsonl``.  A
sweep holds an operating-system file lock on ``FOLDER/.placement-sweep.lock`` (the `filelock`
library: ``flock`` on POSIX, ``LockFileEx`` on Windows) while it runs, and describes itself in
``FOLDER/.placement-sweep.json`` (pid, host, start, command).  The lock dies with its process,
so a sweep that was killed leaves only the description behind: the next sweep takes the lock,
says whose it took over, and writes its own.  A second sweep refuses at once, naming the
running one, or waits for it when asked to (then resumes from the rows the first wrote).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from placement.errors import SweepBusyError

__all__ = ["LOCK_NAME", "INFO_NAME", "sweep_lock", "holder"]

LOCK_NAME = ".placement-sweep.lock"
INFO_NAME = ".placement-sweep.json"


def holder(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The description the sweep holding (or last holding) ``folder`` left, if any."""
    try:
        doc = json.loads((Path(folder) / INFO_NAME).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _describe(doc: dict[str, Any] | None) -> str:
    if not doc:
        return "a sweep that left no description"
    return (
        f"pid {doc.get('pid')} on {doc.get('host')}, started {doc.get('started')}: "
        f"{doc.get('command') or 'a library call'}"
    )


@contextlib.contextmanager
def sweep_lock(
    folder: str | os.PathLike[str],
    *,
    wait: bool = False,
    say: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
) -> Iterator[None]:
    """Hold ``folder``'s sweep lock for the block (re-entrant within one process).  Held by
    another process: :class:`SweepBusyError` naming it, or with ``wait`` block until it is
    free."""
    from filelock import FileLock, Timeout

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out / LOCK_NAME), is_singleton=True, thread_local=False)
    if lock.is_locked:  # this process holds it already (a sweep inside a sweep's command)
        with lock:
            yield
        return
    try:
        lock.acquire(timeout=0)
    except Timeout:
        running = _describe(holder(out))
        if not wait:
            raise SweepBusyError(
                f"{out}: another sweep is running into this folder ({running}); "
                "wait for it to finish, pass --wait to start when it does, or choose another folder"
            ) from None
        say(f"{out}: waiting for the sweep running into this folder ({running})")
        lock.acquire()
    try:
        left = holder(out)
        if left is not None:
            say(f"{out}: took over the lock of a sweep that stopped without releasing it ({_describe(left)})")
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else None,
        }
        (out / INFO_NAME).write_text(json.dumps(info))
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                (out / INFO_NAME).unlink()
    finally:
        lock.release()

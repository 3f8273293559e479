"""``replay``: the start times of another run, replayed (a reference that changes *where* jobs
run and nothing of *who* runs *when*).  Each job may start no earlier than it started in that
run (its jobs CSV, ``--replay-starts``); among the jobs that are due, the earlier recorded start
first; a due job that does not fit is skipped.  Not preemptive.

Why: under FIFO with backfill, how fast the jobs before a wide one run decides whether the wide
one fits before a burst of small ones arrives, and that switch, not where jobs run, can carry a
window's mean JCT (``benchmarks/leafspine-admission/admission.md``).  A clairvoyant placement on
another run's starts measures what knowing the future buys in placement alone."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from placement.errors import InvalidInputError
from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Replay", "read_starts"]


def read_starts(path: str | os.PathLike[str]) -> dict[str, float]:
    """``job -> start_s`` from a run's jobs CSV (``placement simulate``'s ``jobs/<run>.csv``)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InvalidInputError([f"--replay-starts {path}: cannot read it: {e}"]) from None
    if rows and not {"job", "start_s"} <= set(rows[0]):
        raise InvalidInputError([f"--replay-starts {path}: needs the columns job, start_s; it has {sorted(rows[0])}"])
    out, problems = {}, []
    for line, r in enumerate(rows, start=2):
        try:
            t = float(r["start_s"])
        except (TypeError, ValueError):
            t = math.nan
        if not math.isfinite(t) or not r.get("job"):
            problems.append(f"--replay-starts {path} row {line}: a job and a finite start_s are needed")
            continue
        out[r["job"]] = t
    if problems:
        raise InvalidInputError(problems)
    return out


class Replay(QueuePolicy):
    name = "replay"
    timed = True

    starts: Mapping[str, float] = {}

    def configure(self, options: Any) -> None:
        path = getattr(options, "replay_starts", None)
        if path is None:
            raise InvalidInputError(["queue 'replay' needs replay_starts: the jobs CSV of the run to replay"])
        self.starts = read_starts(path)

    def _start(self, c: Candidate) -> float:
        # a job the replayed run never started (it ended first): arrival order, after the rest
        return self.starts.get(c.job.id, math.inf)

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        due = [c for c in candidates if self._start(c) <= now or self._start(c) == math.inf]
        return sorted(due, key=lambda c: (self._start(c), c.job.submit_s, c.job.id))

    def wake_s(self, now: float, candidates: Sequence[Candidate]) -> float:
        return min((t for c in candidates if now < (t := self._start(c)) < math.inf), default=math.inf)

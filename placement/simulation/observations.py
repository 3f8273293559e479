"""What the scheduler has observed: the per-worker iteration logs of the estimator's window,
kept as array chunks (one per estimate tick) and, when asked, written to a CSV in the format
``placement estimate --logs`` reads."""

from __future__ import annotations

import csv
import json
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["LOG_KEYS", "IterationLog", "DecisionLog"]

LOG_KEYS = ("job", "worker", "server", "iteration", "duration", "ratio")
"""Columns of a chunk: job and server by code (position), the worker's iteration time and
its ratio to the job's reference time."""


class IterationLog:
    """The logged iterations within ``window_s`` of now; job and server codes are named by
    ``job_ids`` and ``server_ids``."""

    def __init__(
        self, job_ids: Sequence[str], server_ids: Sequence[str], window_s: float, path: str | None = None
    ) -> None:
        self.job_ids = job_ids
        self.server_ids = server_ids
        self.window_s = window_s
        self.chunks: deque[tuple[float, dict[str, np.ndarray]]] = deque()
        self.file: Any = None
        if path is not None:
            self.file = open(path, "w", newline="")  # noqa: SIM115 - closed by close()
            self.writer = csv.writer(self.file)
            self.writer.writerow(["job", "worker", "server", "iteration", "duration", "time_s"])

    def __bool__(self) -> bool:
        return bool(self.chunks)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def append(self, now: float, rows: dict[str, list[Any]]) -> None:
        """Add one tick's rows (nothing when empty), and write them out when asked."""
        if not rows["job"]:
            return
        self.chunks.append((now, {k: np.asarray(v) for k, v in rows.items()}))
        if self.file is not None:
            self.writer.writerows(
                zip(
                    [self.job_ids[j] for j in rows["job"]],
                    rows["worker"],
                    [self.server_ids[sp] for sp in rows["server"]],
                    rows["iteration"],
                    rows["duration"],
                    [now] * len(rows["job"]),
                )
            )

    def prune(self, now: float) -> None:
        """Drop the chunks older than the window."""
        while self.chunks and self.chunks[0][0] < now - self.window_s:
            self.chunks.popleft()

    def window(self) -> dict[str, np.ndarray]:
        """The rows in the window, as arrays."""
        return {k: np.concatenate([c[k] for _, c in self.chunks]) for k in LOG_KEYS}

    def named(self) -> dict[str, list[Any]]:
        """The rows in the window with jobs and servers by name."""
        lg: dict[str, list[Any]] = {k: v.tolist() for k, v in self.window().items()}
        lg["job"] = [self.job_ids[j] for j in lg["job"]]
        lg["server"] = [self.server_ids[sp] for sp in lg["server"]]
        return lg


class DecisionLog:
    """Every decision the scheduler made, one JSON object a line (``kind``, ``t`` and what it
    decided): what ``tests/serve/test_parity.py`` replays through ``placement serve``, and a
    record to read when a run surprises.  Kinds: ``place`` (the jobs offered, in the
    instance format, the free GPUs, and what was placed, waits and started), ``refit``,
    ``replan`` (the running jobs' iterations left, whether jobs waited, the moves), ``finish``
    and ``preempt``."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w")  # noqa: SIM115 - closed by close()

    def write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self.file.close()

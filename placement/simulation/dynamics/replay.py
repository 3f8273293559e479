"""``replay``: per-server series from a CSV ``time_s, server, slowdown`` (a server absent
from it, and every server before its first row, is at 1.0)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from placement.errors import InvalidInputError
from placement.formats.cells import CellError, cell_number
from placement.model.records import Instance
from placement.simulation.dynamics.base import Change, Dynamics, DynamicsOptions


class Replay(Dynamics):
    name = "replay"
    summary = "per-server series from a CSV time_s, server, slowdown (--replay)"
    congestion = "static"

    def __init__(self, cluster: Instance, *, seed: int, options: DynamicsOptions | None = None) -> None:
        super().__init__(cluster, seed=seed, options=options)
        replay = self.options.replay
        if replay is None:
            raise ValueError("The 'replay' dynamics needs a series (read_replay)")
        unknown = sorted(set(replay) - set(self.cluster.server_pos))
        if unknown:
            raise InvalidInputError(
                [f"replay names server {s!r}, which the cluster does not have" for s in unknown[:40]]
            )
        self.replay = {self.cluster.server_pos[s]: sorted(rows) for s, rows in replay.items()}

    def start(self) -> np.ndarray:
        s = np.ones(self.n)
        for sp, rows in self.replay.items():
            before = [v for t, v in rows if t <= 0.0]
            if before:
                s[sp] = before[-1]
        return s

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        events = sorted((t, sp, v) for sp, rows in self.replay.items() for t, v in rows if t > 0.0)
        i = 0
        while i < len(events):
            t = events[i][0]
            batch = []
            while i < len(events) and events[i][0] == t:
                batch.append(Change(t, events[i][1], events[i][2]))
                i += 1
            yield t, batch


def read_replay(path: str | os.PathLike[str]) -> dict[str, list[tuple[float, float]]]:
    """Read ``time_s, server, slowdown`` rows; every bad row is reported with its line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError([f"cannot read {p}: {e}"], source=str(p)) from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in ("time_s", "server", "slowdown") if c not in header]
    if missing:
        raise InvalidInputError([f"missing column(s) {', '.join(missing)}; the header has {header}"], source=str(p))
    out: dict[str, list[tuple[float, float]]] = {}
    problems: list[str] = []
    for line, row in enumerate(reader, start=2):
        server = (row["server"] or "").strip()
        bad = []
        t = v = 0.0
        try:
            t = cell_number(row["time_s"], minimum=0)
        except CellError as e:
            bad.append(f"time_s {e}")
        try:
            v = cell_number(row["slowdown"], minimum=1)
        except CellError as e:
            bad.append(f"slowdown {e}")
        if not server:
            bad.append("empty server")
        if bad:
            problems.append(f"{p.name} row {line}: " + "; ".join(bad))
            continue
        out.setdefault(server, []).append((t, v))
    if problems:
        raise InvalidInputError(
            problems[:40] + ([f"... and {len(problems) - 40} more"] if len(problems) > 40 else []), source=str(p)
        )
    if not out:
        raise InvalidInputError(["no rows"], source=str(p))
    return out

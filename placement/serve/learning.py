"""What the service learns: per-worker iteration rows pushed to it (the columns ``placement
estimate --logs`` reads), stored once acknowledged, and each server's distribution refitted
from them and, with a telemetry source, from its GPUs' clocks, by the estimator of ``placement
estimate`` (:func:`placement.estimate.logs.estimate_from_ratios`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError
from placement.estimate.logs import LogData, estimate_from_ratios, ratios
from placement.model.records import Slowdown
from placement.serve.base import ServiceBase
from placement.serve.store import estimates, observations
from placement.serve.telemetry import TelemetryError, looks

__all__ = ["Learning", "ROW_FIELDS"]

ROW_FIELDS = ("job", "worker", "server", "iteration", "duration")
"""The fields of an observation row (the columns of ``placement estimate --logs``)."""


class Learning(ServiceBase):
    """Rows in, estimates out (a part of :class:`~placement.serve.service.Service`)."""

    def ingest(self, rows: Any) -> dict[str, Any]:
        """Store per-worker iteration rows (all or none: every bad row named by its index)."""
        if not isinstance(rows, list) or not rows:
            raise InvalidInputError(["rows must be a non-empty list of {job, worker, server, iteration, duration}"])
        if len(rows) > self.config.max_rows:
            raise InvalidInputError([f"rows has {len(rows)} entries; at most {self.config.max_rows} a request"])
        problems: list[str] = []
        clean = []
        servers = self.cluster.server_by_id
        for i, r in enumerate(rows):
            where = f"rows[{i}]"
            if not isinstance(r, Mapping):
                problems.append(f"{where} must be an object with {', '.join(ROW_FIELDS)}")
                continue
            bad = [f"{where}.{k} is required" for k in ROW_FIELDS if k not in r]
            extra = sorted(set(r) - set(ROW_FIELDS))
            bad += [f"{where}.{k} is not a field of a row" for k in extra]
            job, worker, server = r.get("job"), r.get("worker"), r.get("server")
            if "job" in r and (not isinstance(job, str) or not job):
                bad.append(f"{where}.job must be a non-empty string")
            if "worker" in r and (isinstance(worker, bool) or not isinstance(worker, (str, int)) or worker == ""):
                bad.append(f"{where}.worker must be a non-empty string or an integer")
            if "server" in r and (not isinstance(server, str) or server not in servers):
                bad.append(f"{where}.server {server!r} is not a server of the cluster")
            it, d = r.get("iteration"), r.get("duration")
            if "iteration" in r and (isinstance(it, bool) or not isinstance(it, int) or it < 0 or it >= 2**62):
                bad.append(f"{where}.iteration must be an integer >= 0, got {it!r}")
            if "duration" in r and (
                isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or d <= 0
            ):
                bad.append(f"{where}.duration must be a finite number > 0, got {d!r}")
            if bad:
                problems += bad
                continue
            assert isinstance(it, int) and isinstance(d, (int, float))
            clean.append((job, str(worker), server, it, float(d)))
        if problems:
            raise InvalidInputError(problems, source="the rows")
        now = self.clock()
        with self.store.write() as conn:
            self.store.insert_rows(
                conn,
                observations,
                [
                    {"job": j, "worker": w, "server": s, "iteration": it, "duration": d, "received_at": now}
                    for j, w, s, it, d in clean
                ],
            )
        return {"accepted": len(clean)}

    def refit(self) -> dict[str, Any]:
        """Each server's distribution from the rows of the last ``estimate_window_s`` and, with
        a telemetry source, its GPUs' clocks over the same window (the estimator of
        ``placement estimate``, :func:`placement.estimate.logs.estimate_from_ratios`); servers
        with neither get the fleet's.  Replaces the stored estimates; when the telemetry
        source fails it raises :class:`~placement.serve.telemetry.TelemetryError` and the
        estimates stay as they were."""
        now = self.clock()
        start = now - self.config.estimate_window_s
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(
                    observations.c.job, observations.c.server, observations.c.iteration, observations.c.duration
                ).where(observations.c.received_at >= start)
            ).all()
        parts = []
        if rows:
            log = LogData(
                np.array([r[0] for r in rows]),
                np.array([r[1] for r in rows]),
                np.array([r[2] for r in rows], dtype=np.int64),
                np.array([r[3] for r in rows], dtype=float),
            )
            parts.append(ratios(log))
        seen: dict[str, int] = {}
        if self.telemetry is not None:
            try:
                clocks, reasons = self.telemetry.series(start, now)
            except TelemetryError as e:
                self.telemetry_error = str(e)
                self.telemetry_failed_since = self.telemetry_failed_since or now
                raise
            self.telemetry_error, self.telemetry_failed_since = None, None
            tj, ts, tit, tr, seen = looks(
                clocks, reasons, set(self.cluster.server_by_id), self.telemetry.hosts, start, self.telemetry.step_s
            )
            parts.append((tj, ts, tit, tr))
        looked = sum(len(p[0]) for p in parts)
        out = {"servers": 0, "rows": len(rows), "telemetry_looks": looked - (len(parts[0][0]) if rows else 0), **seen}
        if not looked:
            self.last_refit = now
            return {**out, "fitted_at": now}
        job, server, it, r = (np.concatenate([p[k] for p in parts]) for k in range(4))
        per, fleet = estimate_from_ratios(job, server, it, r, servers=[s.id for s in self.cluster.servers])
        with self.store.write() as conn:
            conn.execute(estimates.delete())
            conn.execute(
                estimates.insert(),
                [
                    {
                        "server": s.id,
                        "slowdown": self.store.dumps(_dist(per[s.id].slowdown if s.id in per else fleet)),
                        "samples": int(per[s.id].samples) if s.id in per else 0,
                        "fitted_at": now,
                    }
                    for s in self.cluster.servers
                ],
            )
        self.last_refit = now
        return {**out, "servers": sum(1 for e in per.values() if e.samples), "fitted_at": now}


def _dist(s: Slowdown) -> dict[str, list[float]]:
    return {"values": [float(v) for v in s.values], "probs": [float(p) for p in s.probs]}

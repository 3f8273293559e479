"""What the service learns: per-worker iteration rows pushed to it (the columns ``placement
estimate --logs`` reads), stored once acknowledged, and each server's distribution refitted
from them and, with a telemetry source, from its GPUs' clocks, by the estimator of ``placement
estimate`` (:func:`placement.estimate.logs.estimate_from_ratios`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InstanceError, InvalidInputError
from placement.estimate.logs import median_ratios
from placement.formats.instance import instance_from_dict
from placement.model.records import Slowdown
from placement.serve.base import ServiceBase
from placement.serve.store import estimates, jobs, observations
from placement.serve.telemetry import TelemetryError
from placement.serve.telemetry import looks as looks_of
from placement.simulation.decisions import Look, forecaster_to_dict, refit_belief
from placement.simulation.running import profiled_ms

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
        """Each server's law and, with ``plan_by="forecast"``, the forecaster, learnt by the
        simulator's rule (:func:`placement.simulation.decisions.refit_belief`, the estimator of
        ``placement estimate``) from the rows received within ``estimate_window_s`` of the
        newest and, with a telemetry source, the GPUs' clocks over the window before now.  The
        rows of one refit period are one look at each server they show (as the simulator's
        ticks are), and so is each telemetry scrape step; a row's
        ratio is to the job's median worker that iteration or to the worker's profiled time
        (``ratio_to``).  Replaces the stored estimates; when the telemetry source fails it
        raises :class:`~placement.serve.telemetry.TelemetryError` and they stay as they were."""
        now = self.clock()
        pos = {s.id: k for k, s in enumerate(self.cluster.servers)}
        with self.store.read() as conn:
            newest = conn.execute(sa.select(sa.func.max(observations.c.received_at))).scalar_one_or_none()
            start = (now if newest is None else float(newest)) - self.config.estimate_window_s
            rows = conn.execute(
                sa.select(
                    observations.c.job,
                    observations.c.server,
                    observations.c.iteration,
                    observations.c.duration,
                    observations.c.received_at,
                )
                .where(observations.c.received_at >= start)
                .order_by(observations.c.id)
            ).all()
            specs = {}
            if rows and self.config.ratio_to == "profiled":
                named = sorted({r[0] for r in rows})
                specs = dict(conn.execute(sa.select(jobs.c.id, jobs.c.spec).where(jobs.c.id.in_(named))).all())
            previous = self.belief(conn).forecaster
        looks: list[Look] = []
        skipped = 0
        if rows:
            job = np.array([r[0] for r in rows])
            server = np.array([pos[r[1]] for r in rows], dtype=np.int64)
            it = np.array([r[2] for r in rows], dtype=np.int64)
            d = np.array([r[3] for r in rows], dtype=float)
            at = np.array([r[4] for r in rows], dtype=float)
            if self.config.ratio_to == "profiled":
                ref = self._profiled(job, server, specs)
                keep = np.isfinite(ref)
                ratio = d / np.where(keep, ref, 1.0)
            else:
                keep, ratio = median_ratios(job, it, d)
            skipped = int((~keep).sum())
            looks += _by_time(at[keep], job[keep], server[keep], it[keep], ratio[keep], self.config.refit_every_s)
        seen: dict[str, int] = {}
        n_rows = len(rows)
        if self.telemetry is not None:
            t_start = now - self.config.estimate_window_s
            try:
                clocks, reasons = self.telemetry.series(t_start, now)
            except TelemetryError as e:
                self.telemetry_error = str(e)
                self.telemetry_failed_since = self.telemetry_failed_since or now
                raise
            self.telemetry_error, self.telemetry_failed_since = None, None
            tj, ts, tit, tr, seen = looks_of(
                clocks, reasons, set(pos), self.telemetry.hosts, t_start, self.telemetry.step_s
            )
            tsp = np.array([pos[x] for x in ts], dtype=np.int64)
            # each scrape step is a look of its own (the exporter samples the GPUs at that instant)
            looks += _by_time(t_start + tit * self.telemetry.step_s, tj, tsp, tit, tr, self.telemetry.step_s)
            looks.sort(key=lambda lk: lk[0])
        n_tel = sum(len(c["server"]) for t, c in looks) - (n_rows - skipped)
        out = {"servers": 0, "rows": n_rows, "rows_unprofiled": skipped, "telemetry_looks": n_tel, **seen}
        if not looks:
            self.last_refit = now
            return {**out, "fitted_at": now}
        laws, forecaster, est = refit_belief(
            looks,
            now,
            [s.id for s in self.cluster.servers],
            plan_by=self.config.plan_by,
            estimate_every_s=self.config.refit_every_s,
            previous=previous,
        )
        with self.store.write() as conn:
            conn.execute(estimates.delete())
            conn.execute(
                estimates.insert(),
                [
                    {
                        "server": s.id,
                        "slowdown": self.store.dumps(_dist(laws[s.id])),
                        "samples": int(est[k].samples) if k in est else 0,
                        "fitted_at": now,
                    }
                    for k, s in enumerate(self.cluster.servers)
                    if s.id in laws
                ],
            )
            self.store.set_meta(conn, "forecaster", self.store.dumps(forecaster_to_dict(forecaster)))
        self.last_refit = now
        return {**out, "servers": sum(1 for e in est.values() if e.samples), "fitted_at": now}

    def _profiled(self, job: np.ndarray, server: np.ndarray, specs: Mapping[str, str]) -> np.ndarray:
        """Each row's worker's straggler-free compute time (ms) from its job's spec
        (:func:`placement.simulation.running.profiled_ms`); NaN for a job never placed here."""
        docs = {jid: json.loads(spec) for jid, spec in specs.items()}
        parsed: dict[str, Any] = {}
        try:  # the cluster checked once for all (each spec was checked when it was placed)
            parsed = {j.id: j for j in instance_from_dict({**self._doc, "jobs": list(docs.values())}).jobs}
        except InstanceError:  # one spec this version refuses: the others still count
            for jid, doc in docs.items():
                try:
                    parsed[jid] = instance_from_dict({**self._doc, "jobs": [doc]}, source=jid).jobs[0]
                except InstanceError:
                    continue
        types = [s.gpu_type for s in self.cluster.servers]
        cache: dict[tuple[str, int], float] = {}
        out = np.empty(len(job))
        for i, (jid, sp) in enumerate(zip(job.tolist(), server.tolist())):
            v = cache.get((jid, sp))
            if v is None:
                j = parsed.get(jid)
                v = cache[(jid, sp)] = profiled_ms(j, types[sp]) if j is not None else math.nan
            out[i] = v
        return out


def _by_time(
    at: np.ndarray, job: np.ndarray, server: np.ndarray, it: np.ndarray, ratio: np.ndarray, period_s: float
) -> list[Look]:
    """The rows as looks, one per refit period they were received in (at the last time one
    was), in time order: the simulator's looks, one per estimate tick.  A server seen through
    several rows of a period is one look (its state persists over minutes, so they are not
    independent; the forecaster's look weight says how much of an observation a look is)."""
    out: list[Look] = []
    bucket = np.floor(at / period_s)
    for b in np.unique(bucket):
        m = bucket == b
        out.append((float(at[m].max()), {"job": job[m], "server": server[m], "iteration": it[m], "ratio": ratio[m]}))
    return out


def _dist(s: Slowdown) -> dict[str, list[float]]:
    return {"values": [float(v) for v in s.values], "probs": [float(p) for p in s.probs]}

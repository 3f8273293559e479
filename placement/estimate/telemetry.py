"""Per-server resource telemetry: AR forecasts of utilisation, and the contention a job's
demands meet on a server, written as that job's own slowdown estimate there."""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.csvrows import csv_text, raise_problems
from placement.formats.cells import CellError, cell_number
from placement.model.records import Instance, Slowdown

__all__ = [
    "RESOURCES",
    "Telemetry",
    "TelemetryError",
    "read_telemetry",
    "Forecast",
    "forecast",
    "read_demands",
    "product",
    "contention_overrides",
]

RESOURCES = ("cpu", "memory", "network", "gpu")


class TelemetryError(InvalidInputError):
    kind = "telemetry"


@dataclass(frozen=True)
class Telemetry:
    step: float
    series: Mapping[str, Mapping[str, np.ndarray]]
    """``series[server][resource]``: utilisation in [0, 1] at regular steps."""


def read_telemetry(path: str | os.PathLike[str]) -> Telemetry:
    """Read ``server, time, cpu, memory, network, gpu``; refuses bad rows (with their line),
    utilisations outside [0, 1], and gaps in a server's time steps."""
    p = Path(path)
    f = csv_text(p, TelemetryError)
    rows: dict[str, list[tuple[float, list[float], int]]] = defaultdict(list)
    problems: list[str] = []
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in ("server", "time") + RESOURCES if c not in header]
        if missing:
            raise TelemetryError(
                [f"missing column(s) {', '.join(map(repr, missing))}; the header has {header}"], source=str(p)
            )
        for line, row in enumerate(reader, start=2):
            sid = (row.get("server") or "").strip()
            bad = [] if sid else ["empty server"]
            t = 0.0
            try:
                t = cell_number(row.get("time"))
            except CellError as e:
                bad.append(f"time {e}")
            vals = []
            for c in RESOURCES:
                try:
                    vals.append(cell_number(row.get(c), minimum=0, maximum=1))
                except CellError:
                    bad.append(f"{c} must be a utilisation in [0, 1], got {row.get(c)!r}")
            if bad:
                problems.append(f"{p.name} row {line}: " + "; ".join(bad))
                continue
            rows[sid].append((t, vals, line))
    steps = []
    for rs in rows.values():
        rs.sort(key=lambda x: x[0])
        steps += [b[0] - a[0] for a, b in zip(rs, rs[1:])]
    step = float(np.median(steps)) if steps else 1.0
    if step <= 0:
        problems.append(f"{p.name}: repeated time stamps, no time step")
    for sid, rs in rows.items():
        for a, b in zip(rs, rs[1:]):
            d = b[0] - a[0]
            if d <= 0:
                problems.append(f"{p.name} row {b[2]}: server {sid!r} repeats time {b[0]:g}")
            elif abs(d - step) > 1e-6 * max(1.0, step):
                problems.append(
                    f"{p.name} row {b[2]}: server {sid!r} jumps from time {a[0]:g} to {b[0]:g}, "
                    f"a gap in its {step:g} steps; fill or resample it"
                )
        if len(rs) < 8:
            problems.append(f"{p.name}: server {sid!r} has {len(rs)} time steps; forecasting needs at least 8")
    raise_problems(problems, str(p), TelemetryError)
    series = {sid: {c: np.array([v[1][k] for v in rs]) for k, c in enumerate(RESOURCES)} for sid, rs in rows.items()}
    return Telemetry(step, series)


@dataclass(frozen=True)
class Forecast:
    mean: float
    sd: float


def forecast(y: np.ndarray, *, order: int = 2, horizon: int = 1) -> Forecast:
    """AR(``order``) with intercept by least squares; ``horizon``-step forecast and its
    error standard deviation (clipped to utilisations in [0, 1])."""
    y = np.asarray(y, dtype=float)
    p = min(order, max(1, len(y) // 4))
    X = np.column_stack([np.ones(len(y) - p)] + [y[p - k - 1 : len(y) - k - 1] for k in range(p)])
    coef, *_ = np.linalg.lstsq(X, y[p:], rcond=None)
    resid = y[p:] - X @ coef
    sigma = float(np.sqrt(resid @ resid / max(1, len(resid) - p - 1)))
    hist = list(y[-p:])
    for _ in range(horizon):
        nxt = coef[0] + sum(coef[k + 1] * hist[-k - 1] for k in range(p))
        hist.append(float(nxt))
    psi = [1.0]
    for i in range(1, horizon):
        psi.append(sum(coef[k + 1] * psi[i - k - 1] for k in range(p) if i - k - 1 >= 0))
    sd = sigma * math.sqrt(sum(x * x for x in psi))
    return Forecast(float(np.clip(hist[-1], 0.0, 1.0)), sd)


def read_demands(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """``job, cpu, memory, network, gpu``: the fraction of one server's resource the job's
    workers on a server need (empty: none)."""
    p = Path(path)
    out: dict[str, dict[str, float]] = {}
    problems = []
    with csv_text(p, TelemetryError) as f:
        reader = csv.DictReader(f)
        if "job" not in (reader.fieldnames or []):
            raise TelemetryError([f"{p.name}: missing column 'job'"], source=str(p))
        for line, row in enumerate(reader, start=2):
            d = {}
            for c in RESOURCES:
                text = (row.get(c) or "").strip()
                if not text:
                    continue
                try:
                    d[c] = cell_number(text, minimum=0, maximum=1)
                except CellError:
                    problems.append(f"{p.name} row {line}: {c} must be a fraction in [0, 1], got {text!r}")
            out[(row.get("job") or "").strip()] = d
    raise_problems(problems, str(p), TelemetryError)
    return out


_THREE = ((-math.sqrt(3.0), 1 / 6), (0.0, 2 / 3), (math.sqrt(3.0), 1 / 6))


def product(a: Slowdown, b: Slowdown, max_points: int = 12) -> Slowdown:
    """Distribution of ``A * B`` for independent ``A``, ``B`` (merged, at most
    ``max_points`` support points: the smallest probabilities merge upwards)."""
    acc: dict[float, float] = defaultdict(float)
    for va, pa in zip(a.values, a.probs):
        for vb, pb in zip(b.values, b.probs):
            acc[round(va * vb, 4)] += pa * pb
    items = sorted(acc.items())
    while len(items) > max_points:
        k = min(range(len(items) - 1), key=lambda i: items[i][1])
        (_, p0), (v1, p1) = items[k], items[k + 1]
        items[k : k + 2] = [(v1, p0 + p1)]  # merge upwards: never optimistic
    total = sum(p for _, p in items)
    return Slowdown(tuple(v for v, _ in items), tuple(p / total for _, p in items))


def contention_overrides(
    instance: Instance, tele: Telemetry, demands: Mapping[str, Mapping[str, float]], *, horizon: int = 1, order: int = 2
) -> dict[str, dict[str, Slowdown]]:
    """``{job: {server: slowdown}}`` for the jobs with demands, on the servers with
    telemetry, where contention can slow the job (the log-based slowdown multiplied in)."""
    problems = [f"telemetry names unknown server {s!r}" for s in tele.series if s not in instance.server_by_id]
    problems += [f"demands name unknown job {j!r}" for j in demands if j not in instance.job_by_id]
    raise_problems(problems, "telemetry", TelemetryError)
    fc = {s: {c: forecast(y, order=order, horizon=horizon) for c, y in res.items()} for s, res in tele.series.items()}
    out: dict[str, dict[str, Slowdown]] = {}
    for jid, d in demands.items():
        for sid, res in fc.items():
            vals: dict[float, float] = defaultdict(float)
            for z, pz in _THREE:  # the resources' forecast errors taken as comonotone: one draw
                s = 1.0
                for c, need in d.items():
                    u = float(np.clip(res[c].mean + z * res[c].sd, 0.0, 0.999))
                    s = max(s, need / (1.0 - u)) if need > 0 else s
                vals[round(s, 4)] += pz
            if all(v <= 1.0 for v in vals):
                continue
            cont = Slowdown(tuple(sorted(vals)), tuple(vals[v] for v in sorted(vals)))
            base = instance.server_by_id[sid].slowdown
            out.setdefault(jid, {})[sid] = product(base, cont)
    return out

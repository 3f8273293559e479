"""Proactive slowdown estimation: from per-worker iteration logs and from per-server
resource telemetry to the slowdown fields of an instance.

**Iteration logs** (columns ``job, worker, server, iteration, duration``; the PAI files are
read by :func:`read_pai`): each worker's duration is divided by the median worker's of the
same job and iteration; the ratios are binned at :data:`BIN_EDGES` (below 1.05: no
slowdown).  Per server, samples are weighted by recency, ``0.5 ** (age / half_life)`` in
iterations of the server's own job, so that a server that recovered is trusted again.  The
probability that the server straggles gets a **Beta prior** whose mean is the fleet's
straggle rate and whose strength is ``prior_strength`` pseudo-iterations: it is conjugate to
the per-iteration straggle indicator (closed-form posterior mean ``(k + a) / (n + a + b)``
with weighted counts), and it gives an unseen server exactly the fleet's rate.  How much a
straggling server slows down is shrunk the same way, a Dirichlet prior towards the fleet's
distribution over the straggle bins.  A bin's support value is the fleet's mean ratio in it.

**Telemetry** (columns ``server, time, cpu, memory, network, gpu``, utilisations in [0, 1],
on a regular time step): per server and resource an AR(``order``) model with intercept,
fitted by least squares, forecasts utilisation ``horizon`` steps ahead with its error
variance ``sigma^2 sum psi_i^2``.  The forecast is discretised to three points
(``mean -/+ sqrt(3) sd`` with probabilities 1/6, 2/3, 1/6: the same mean and variance).
**Contention**: a job whose workers need a fraction ``d`` of a server's resource runs at
``S = max(1, d / (1 - u))`` when the other tenants use ``u`` of it; the job's slowdown on a
server is the product of the server's own (log-based) slowdown and the worst resource's
contention, written as that job's override for that server.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placement.errors import InvalidInputError
from placement.model import Instance, Slowdown

__all__ = [
    "BIN_EDGES", "bin_values", "LogData", "read_iteration_log", "read_pai", "ratios", "ServerEstimate", "estimate_from_logs",
    "Telemetry", "read_telemetry", "Forecast", "forecast", "read_demands", "contention_overrides",
    "apply_estimates", "product",
]

BIN_EDGES: tuple[float, ...] = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0)
"""Upper edges of the no-slowdown bin and the straggle bins (a last bin is open)."""
MAX_LISTED = 40


class LogError(InvalidInputError):
    kind = "log"


@dataclass(frozen=True)
class LogData:
    job: np.ndarray
    server: np.ndarray
    iteration: np.ndarray
    duration: np.ndarray


def _problems_or_raise(problems: list[str], source: str, cls: type[InvalidInputError] = LogError) -> None:
    if problems:
        more = len(problems) - MAX_LISTED
        shown = problems[:MAX_LISTED] + ([f"... and {more} more"] if more > 0 else [])
        raise cls(shown, source=source)


def _num(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def read_iteration_log(path: str | os.PathLike[str], *, job: str | None = None,
                       columns: Mapping[str, str] | None = None) -> LogData:
    """Read a CSV of per-worker iteration times; every bad row is reported with its line.

    ``columns`` maps the canonical names (``job, worker, server, iteration, duration``) to
    the file's; ``job`` gives the job id for files of a single job without that column.
    """
    cols = {"job": "job", "worker": "worker", "server": "server", "iteration": "iteration", "duration": "duration",
            **(columns or {})}
    p = Path(path)
    try:
        f = open(p, newline="", encoding="utf-8")
    except OSError as e:
        raise LogError([f"cannot read {p}: {e}"], source=str(p)) from None
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        need = [k for k in ("worker", "iteration", "duration") + (() if job else ("job",)) if cols[k] not in header]
        if need:
            raise LogError([f"missing column(s) {', '.join(repr(cols[k]) for k in need)}; the header has {header}"], source=str(p))
        js, ss, its, ds, problems = [], [], [], [], []
        for line, row in enumerate(reader, start=2):
            jid = job if job else (row.get(cols["job"]) or "").strip()
            worker = (row.get(cols["worker"]) or "").strip()
            server = (row.get(cols["server"]) or "").strip() if cols["server"] in header else f"{jid}/w{worker}"
            it, d = _num(row.get(cols["iteration"]) or ""), _num(row.get(cols["duration"]) or "")
            bad = []
            if not jid:
                bad.append("empty job")
            if not worker:
                bad.append("empty worker")
            if not server:
                bad.append("empty server")
            if it is None or it != int(it):
                bad.append(f"{cols['iteration']} must be an integer, got {row.get(cols['iteration'])!r}")
            if d is None or d <= 0:
                bad.append(f"{cols['duration']} must be a number > 0, got {row.get(cols['duration'])!r}")
            if bad:
                problems.append(f"{p.name} row {line}: " + "; ".join(bad))
                continue
            js.append(jid)
            ss.append(server)
            its.append(int(it))  # type: ignore[arg-type]
            ds.append(d)
    _problems_or_raise(problems, str(p))
    if not ds:
        raise LogError([f"{p.name}: no rows"], source=str(p))
    return LogData(np.array(js), np.array(ss), np.array(its, dtype=np.int64), np.array(ds, dtype=float))


def read_pai(paths: Sequence[str | os.PathLike[str]]) -> LogData:
    """The Alibaba PAI per-worker mini-batch files (``worker, gpu, time, batch_time_norm``):
    the job is the file name, each worker its own server ``<job>/w<worker>``."""
    parts = [read_iteration_log(p, job=Path(p).stem.replace("_norm", ""),
                                columns={"iteration": "time", "duration": "batch_time_norm"}) for p in paths]
    return LogData(*(np.concatenate([getattr(x, f.name) for x in parts]) for f in dataclasses.fields(LogData)))


def ratios(log: LogData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(job, server, iteration, ratio to the job's median worker that iteration)``, for
    iterations with at least two workers."""
    key = np.char.add(np.char.add(log.job.astype(str), "\x00"), log.iteration.astype(str))
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    med = np.zeros(len(uniq))
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    d_sorted = log.duration[order]
    for g, (s, c) in enumerate(zip(starts, counts)):
        med[g] = float(np.median(d_sorted[s:s + c]))
    keep = counts[inv] >= 2
    r = log.duration / med[inv]
    return log.job[keep], log.server[keep], log.iteration[keep], r[keep]


@dataclass(frozen=True)
class ServerEstimate:
    server: str
    samples: int
    effective: float
    """Recency-weighted sample count."""
    straggle_probability: float
    slowdown: Slowdown

    @property
    def mean(self) -> float:
        return self.slowdown.mean()


def _bin(r: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(BIN_EDGES), r, side="right")


def bin_values(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Support value of each bin: the mean of the ratios ``r`` in it (at least 1; the
    no-slowdown bin is 1); an empty bin gets its midpoint."""
    nb = len(BIN_EDGES) + 1
    values = np.ones(nb)
    for k in range(1, nb):
        sel = r[b == k]
        hi = BIN_EDGES[k] if k < len(BIN_EDGES) else 2 * BIN_EDGES[-1]
        values[k] = max(1.0, float(sel.mean())) if len(sel) else (BIN_EDGES[k - 1] + hi) / 2
    return values


HALF_LIFE = 1000.0
PRIOR_STRENGTH = 5.0
SHAPE_STRENGTH = 0.5
"""Defaults, chosen on a 12-point grid (half-life 100/1000, strengths 5/20 and 0.5/2/5) by
the PAI backtest (``placement backtest``): the hyperparameters are in-sample there, the
per-server fits are not."""


def estimate_from_logs(log: LogData, *, half_life: float = HALF_LIFE, prior_strength: float = PRIOR_STRENGTH,
                       shape_strength: float = SHAPE_STRENGTH, servers: Iterable[str] = ()) -> tuple[dict[str, ServerEstimate], Slowdown]:
    """Per-server estimates (and the fleet prior, for servers without observations).

    ``half_life`` is in the log's iteration units; ``prior_strength`` and
    ``shape_strength`` are the pseudo-counts of the Beta and Dirichlet priors."""
    if not half_life > 0 or not prior_strength > 0 or not shape_strength > 0:
        raise ValueError("half_life, prior_strength and shape_strength must be > 0")
    job, server, it, r = ratios(log)
    b = _bin(r)
    nb = len(BIN_EDGES) + 1
    values = bin_values(r, b)
    # recency: age in iterations of the server's own job
    last = defaultdict(int)
    for j, t in zip(job, it):
        last[j] = max(last[j], int(t))
    age = np.array([last[j] - t for j, t in zip(job, it)], dtype=float)
    w = 0.5 ** (age / half_life)
    srv_ids = list(dict.fromkeys(list(server) + list(servers)))
    per = {s: np.flatnonzero(server == s) for s in dict.fromkeys(server)}
    rates = [float((b[ix] > 0).mean()) for ix in per.values()]
    fleet_rate = float(np.mean(rates)) if rates else 0.0
    fleet_shape = np.bincount(b[b > 0], minlength=nb)[1:].astype(float)
    fleet_shape = fleet_shape / fleet_shape.sum() if fleet_shape.sum() else np.full(nb - 1, 1.0 / (nb - 1))
    a0, b0 = prior_strength * fleet_rate, prior_strength * (1 - fleet_rate)

    def dist(p: float, shape: np.ndarray) -> Slowdown:
        probs = np.concatenate(([1 - p], p * shape))
        keep = probs > 1e-9
        v, q = values[keep], probs[keep]
        q = np.round(q / q.sum(), 6)
        q[int(np.argmax(q))] += 1.0 - q.sum()
        return Slowdown(tuple(float(round(x, 4)) for x in v), tuple(float(x) for x in q))

    fleet = dist(fleet_rate, fleet_shape)
    out: dict[str, ServerEstimate] = {}
    for s in srv_ids:
        ix = per.get(s, np.zeros(0, dtype=np.int64))
        ws, bs = w[ix], b[ix]
        n_eff = float(ws.sum())
        k_eff = float(ws[bs > 0].sum())
        p = (k_eff + a0) / (n_eff + a0 + b0) if (n_eff + a0 + b0) > 0 else fleet_rate
        counts = np.bincount(bs[bs > 0], weights=ws[bs > 0], minlength=nb)[1:]
        shape = (counts + shape_strength * fleet_shape) / (counts.sum() + shape_strength)
        out[s] = ServerEstimate(s, len(ix), n_eff, float(p), dist(float(p), shape))
    return out, fleet


# ------------------------------------------------------------------ telemetry
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
    try:
        f = open(p, newline="", encoding="utf-8")
    except OSError as e:
        raise TelemetryError([f"cannot read {p}: {e}"], source=str(p)) from None
    rows: dict[str, list[tuple[float, list[float], int]]] = defaultdict(list)
    problems: list[str] = []
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in ("server", "time") + RESOURCES if c not in header]
        if missing:
            raise TelemetryError([f"missing column(s) {', '.join(map(repr, missing))}; the header has {header}"], source=str(p))
        for line, row in enumerate(reader, start=2):
            sid = (row.get("server") or "").strip()
            t = _num(row.get("time") or "")
            vals = [_num(row.get(c) or "") for c in RESOURCES]
            bad = [] if sid else ["empty server"]
            if t is None:
                bad.append(f"time must be a number, got {row.get('time')!r}")
            for c, v in zip(RESOURCES, vals):
                if v is None or not 0 <= v <= 1:
                    bad.append(f"{c} must be a utilisation in [0, 1], got {row.get(c)!r}")
            if bad:
                problems.append(f"{p.name} row {line}: " + "; ".join(bad))
                continue
            rows[sid].append((t, vals, line))  # type: ignore[arg-type]
    steps = []
    for sid, rs in rows.items():
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
                problems.append(f"{p.name} row {b[2]}: server {sid!r} jumps from time {a[0]:g} to {b[0]:g}, "
                                f"a gap in its {step:g} steps; fill or resample it")
        if len(rs) < 8:
            problems.append(f"{p.name}: server {sid!r} has {len(rs)} time steps; forecasting needs at least 8")
    _problems_or_raise(problems, str(p), TelemetryError)
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
    X = np.column_stack([np.ones(len(y) - p)] + [y[p - k - 1: len(y) - k - 1] for k in range(p)])
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
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if "job" not in (reader.fieldnames or []):
            raise TelemetryError([f"{p.name}: missing column 'job'"], source=str(p))
        for line, row in enumerate(reader, start=2):
            d = {}
            for c in RESOURCES:
                text = (row.get(c) or "").strip()
                if not text:
                    continue
                v = _num(text)
                if v is None or not 0 <= v <= 1:
                    problems.append(f"{p.name} row {line}: {c} must be a fraction in [0, 1], got {text!r}")
                else:
                    d[c] = v
            out[(row.get("job") or "").strip()] = d
    _problems_or_raise(problems, str(p), TelemetryError)
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
        items[k: k + 2] = [(v1, p0 + p1)]  # merge upwards: never optimistic
    total = sum(p for _, p in items)
    return Slowdown(tuple(v for v, _ in items), tuple(p / total for _, p in items))


def contention_overrides(instance: Instance, tele: Telemetry, demands: Mapping[str, Mapping[str, float]], *,
                         horizon: int = 1, order: int = 2) -> dict[str, dict[str, Slowdown]]:
    """``{job: {server: slowdown}}`` for the jobs with demands, on the servers with
    telemetry, where contention can slow the job (the log-based slowdown multiplied in)."""
    problems = [f"telemetry names unknown server {s!r}" for s in tele.series if s not in instance.server_by_id]
    problems += [f"demands name unknown job {j!r}" for j in demands if j not in instance.job_by_id]
    _problems_or_raise(problems, "telemetry", TelemetryError)
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


def apply_estimates(instance: Instance, servers: Mapping[str, ServerEstimate] | None = None,
                    fleet: Slowdown | None = None, overrides: Mapping[str, Mapping[str, Slowdown]] | None = None) -> Instance:
    """``instance`` with server slowdowns from ``servers`` (servers not observed get
    ``fleet``) and per-job ``overrides``; checked by the loader."""
    if instance.scenarios is not None:
        raise InvalidInputError(["the instance has a scenario table; estimates write per-server distributions"])
    srv = list(instance.servers)
    if servers is not None:
        unknown = [s for s in servers if s not in instance.server_by_id]
        if unknown:
            raise LogError([f"the logs name server {s!r}, which the instance does not have" for s in unknown[:MAX_LISTED]])
        srv = [dataclasses.replace(s, slowdown=servers[s.id].slowdown if s.id in servers else (fleet or s.slowdown))
               for s in srv]
    jobs = list(instance.jobs)
    if overrides:
        jobs = [dataclasses.replace(j, slowdown={**j.slowdown, **overrides.get(j.id, {})}) for j in jobs]
    inst = instance.replace(servers=tuple(srv), jobs=tuple(jobs))
    # apply_estimates changes distributions only; the base slowdowns used in the overrides
    # are the new server ones when both are given (see estimate CLI order)
    return inst.checked()

"""Slowdown estimates from per-worker iteration logs: ratios to the median worker, binned,
recency-weighted, shrunk towards the fleet by Beta/Dirichlet priors (see
:mod:`placement.estimate`)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.csvrows import csv_text, raise_problems
from placement.formats.cells import CellError, cell_number
from placement.model.records import Slowdown

__all__ = [
    "BIN_EDGES",
    "bin_index",
    "bin_values",
    "LogData",
    "LogError",
    "read_iteration_log",
    "read_pai",
    "joined_logs",
    "gpu_factors_from_logs",
    "ratios",
    "median_ratios",
    "ServerEstimate",
    "estimate_from_logs",
    "estimate_from_ratios",
    "HALF_LIFE",
    "GPU_PRIOR",
    "PRIOR_STRENGTH",
    "SHAPE_STRENGTH",
]

BIN_EDGES: tuple[float, ...] = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0)
"""Upper edges of the no-slowdown bin and the straggle bins (a last bin is open)."""


class LogError(InvalidInputError):
    kind = "log"


@dataclass(frozen=True)
class LogData:
    job: np.ndarray
    server: np.ndarray
    iteration: np.ndarray
    duration: np.ndarray
    gpu: np.ndarray | None = None
    """Each row's GPU index on its server (``-1``: not said); ``None`` when no file said any."""

    def rows(self, keep: np.ndarray) -> LogData:
        """The rows ``keep`` selects."""
        return LogData(
            self.job[keep],
            self.server[keep],
            self.iteration[keep],
            self.duration[keep],
            None if self.gpu is None else self.gpu[keep],
        )


def read_iteration_log(
    path: str | os.PathLike[str], *, job: str | None = None, columns: Mapping[str, str] | None = None
) -> LogData:
    """Read a CSV of per-worker iteration times; every bad row is reported with its line.

    ``columns`` maps the canonical names (``job, worker, server, iteration, duration``, and
    the optional ``gpu``: the worker's GPU index on its server) to the file's; ``job`` gives the
    job id for files of a single job without that column.
    """
    cols = {
        "job": "job",
        "worker": "worker",
        "server": "server",
        "iteration": "iteration",
        "duration": "duration",
        "gpu": "gpu",
        **(columns or {}),
    }
    p = Path(path)
    f = csv_text(p, LogError)
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        need = [k for k in ("worker", "iteration", "duration") + (() if job else ("job",)) if cols[k] not in header]
        if need:
            raise LogError(
                [f"missing column(s) {', '.join(repr(cols[k]) for k in need)}; the header has {header}"], source=str(p)
            )
        has_gpu = cols["gpu"] in header
        js, ss, its, ds, gs, problems = [], [], [], [], [], []
        for line, row in enumerate(reader, start=2):
            jid = job if job else (row.get(cols["job"]) or "").strip()
            worker = (row.get(cols["worker"]) or "").strip()
            server = (row.get(cols["server"]) or "").strip() if cols["server"] in header else f"{jid}/w{worker}"
            bad = []
            if not jid:
                bad.append("empty job")
            if not worker:
                bad.append("empty worker")
            if not server:
                bad.append("empty server")
            it = d = 0.0
            try:
                it = cell_number(row.get(cols["iteration"]), integer=True)
            except CellError as e:
                bad.append(f"{cols['iteration']} {e}")
            try:
                d = cell_number(row.get(cols["duration"]), minimum=0, exclusive_minimum=True)
            except CellError as e:
                bad.append(f"{cols['duration']} {e}")
            g = -1.0
            if has_gpu and (row.get(cols["gpu"]) or "").strip():
                try:
                    g = cell_number(row.get(cols["gpu"]), integer=True, minimum=0)
                except CellError as e:
                    bad.append(f"{cols['gpu']} {e}")
            if bad:
                problems.append(f"{p.name} row {line}: " + "; ".join(bad))
                continue
            js.append(jid)
            ss.append(server)
            its.append(int(it))
            ds.append(d)
            gs.append(int(g))
    raise_problems(problems, str(p), LogError)
    if not ds:
        raise LogError([f"{p.name}: no rows"], source=str(p))
    gpu = np.array(gs, dtype=np.int64) if has_gpu else None
    return LogData(np.array(js), np.array(ss), np.array(its, dtype=np.int64), np.array(ds, dtype=float), gpu)


def read_pai(paths: Sequence[str | os.PathLike[str]]) -> LogData:
    """The Alibaba PAI per-worker mini-batch files (``worker, gpu, time, batch_time_norm``):
    the job is the file name, each worker its own server ``<job>/w<worker>``."""
    parts = [
        read_iteration_log(
            p,
            job=Path(p).stem.replace("_norm", ""),
            # PAI's ``gpu`` column is not a GPU index
            columns={"iteration": "time", "duration": "batch_time_norm", "gpu": "\x00"},
        )
        for p in paths
    ]
    return joined_logs(parts)


def joined_logs(parts: Sequence[LogData]) -> LogData:
    """The rows of every part, in order (GPUs ``-1`` where a part said none)."""
    cat = [np.concatenate([getattr(x, f) for x in parts]) for f in ("job", "server", "iteration", "duration")]
    if all(x.gpu is None for x in parts):
        return LogData(cat[0], cat[1], cat[2], cat[3])
    gpu = np.concatenate([x.gpu if x.gpu is not None else np.full(len(x.job), -1, dtype=np.int64) for x in parts])
    return LogData(cat[0], cat[1], cat[2], cat[3], gpu)


def median_ratios(job: np.ndarray, it: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ratio to its job's median worker that iteration, and which rows have one
    (iterations with at least two workers)."""
    key = np.char.add(np.char.add(job.astype(str), "\x00"), it.astype(str))
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    med = np.zeros(len(uniq))
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    d_sorted = duration[order]
    for g, (s, c) in enumerate(zip(starts, counts)):
        med[g] = float(np.median(d_sorted[s : s + c]))
    return counts[inv] >= 2, duration / med[inv]


def ratios(
    log: LogData, gpu_factors: Mapping[tuple[str, int], float] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(job, server, iteration, ratio to the job's median worker that iteration)``, for
    iterations with at least two workers; each ratio over its GPU's steady factor where
    ``gpu_factors`` has one (:func:`gpu_factors_from_logs`: what is left is the server's)."""
    keep, r = median_ratios(log.job, log.iteration, log.duration)
    if gpu_factors and log.gpu is not None:
        r = r / np.array([gpu_factors.get((str(sv), int(g)), 1.0) for sv, g in zip(log.server, log.gpu)])
    return log.job[keep], log.server[keep], log.iteration[keep], r[keep]


GPU_PRIOR = 2.0
"""Pseudo-observations at factor 1 (the median GPU) that shrink a GPU's factor from logs."""


def gpu_factors_from_logs(log: LogData, prior: float = GPU_PRIOR) -> dict[tuple[str, int], float]:
    """Each GPU's steady factor ``(server, gpu) -> f`` from logs that name the workers' GPUs.
    Workers of one job on one server in one iteration share the server's episodes, so what sets
    them apart is their GPUs: a worker's time over the median of those peers, its geometric mean
    over the GPU's rows, shrunk towards 1 by ``prior`` pseudo-observations.  A factor is relative
    to the GPU's peers on its server (a server whose GPUs are all slow is the server's slowdown);
    GPUs never seen beside a peer are not estimated."""
    if log.gpu is None:
        return {}
    group = np.char.add(np.char.add(log.job.astype(str), "\x00"), log.server.astype(str))
    peers, rel = median_ratios(group, log.iteration, log.duration)
    use = peers & (log.gpu >= 0)
    sums: dict[tuple[str, int], float] = {}
    counts: dict[tuple[str, int], int] = {}
    for sv, g, x in zip(log.server[use].tolist(), log.gpu[use].tolist(), np.log(rel[use]).tolist()):
        k = (str(sv), int(g))
        sums[k] = sums.get(k, 0.0) + x
        counts[k] = counts.get(k, 0) + 1
    return {k: float(np.exp(sums[k] / (counts[k] + prior))) for k in sums}


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


def bin_index(r: np.ndarray) -> np.ndarray:
    """The bin of each ratio in ``r`` (0: no slowdown; ``k``: below ``BIN_EDGES[k]``)."""
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


EMPIRICAL = 0.0
"""``prior_strength=EMPIRICAL``: the Beta prior's strength from the servers' own spread
(:func:`empirical_strength`)."""
STRENGTH_RANGE = (1.0, 1e4)


def empirical_strength(k: np.ndarray, n: np.ndarray) -> float:
    """The strength (pseudo-observations) of the Beta prior on a server's slow share that
    the servers' spread calls for (empirical Bayes, method of moments): ``k`` slow out of
    ``n`` (effective) observations per server.  The spread of the servers' shares beyond
    what sampling explains is the prior's variance ``tau^2``, and a Beta of mean ``p`` and
    that variance has strength ``p (1 - p) / tau^2 - 1``: servers that differ little are
    shrunk hard towards the fleet, servers that differ much keep their own shares.  Within
    :data:`STRENGTH_RANGE`.

    >>> n = np.full(50, 40.0)
    >>> round(empirical_strength(np.full(50, 8.0), n))  # no spread beyond sampling: shrink hard
    10000
    >>> k = np.array([2.0, 30.0] * 25)  # calm and hot servers: each keeps its own
    >>> empirical_strength(k, n) < 5
    True
    """
    seen = n > 0
    if seen.sum() < 2:
        return STRENGTH_RANGE[1]
    k, n = k[seen], n[seen]
    p = float(k.sum() / n.sum())
    if p <= 0.0 or p >= 1.0:
        return STRENGTH_RANGE[1]
    share = k / n
    spread = float(np.average((share - p) ** 2, weights=n))
    sampling = p * (1.0 - p) * float(np.average(1.0 / n, weights=n))
    tau2 = spread - sampling
    if tau2 <= 0.0:
        return STRENGTH_RANGE[1]
    return float(np.clip(p * (1.0 - p) / tau2 - 1.0, *STRENGTH_RANGE))


HALF_LIFE = 1000.0
PRIOR_STRENGTH = 5.0
SHAPE_STRENGTH = 0.5
"""Defaults, chosen on a 12-point grid (half-life 100/1000, strengths 5/20 and 0.5/2/5) by
the PAI backtest (``placement backtest``): the hyperparameters are in-sample there, the
per-server fits are not."""


def estimate_from_logs(
    log: LogData,
    *,
    half_life: float = HALF_LIFE,
    prior_strength: float = PRIOR_STRENGTH,
    shape_strength: float = SHAPE_STRENGTH,
    servers: Iterable[str] = (),
    gpu_factors: Mapping[tuple[str, int], float] | None = None,
) -> tuple[dict[str, ServerEstimate], Slowdown]:
    """Per-server estimates (and the fleet prior, for servers without observations).

    ``half_life`` is in the log's iteration units; ``prior_strength`` and
    ``shape_strength`` are the pseudo-counts of the Beta and Dirichlet priors; ``gpu_factors``
    (:func:`gpu_factors_from_logs`) are taken out of the ratios first."""
    job, server, it, r = ratios(log, gpu_factors)
    return estimate_from_ratios(
        job,
        server,
        it,
        r,
        half_life=half_life,
        prior_strength=prior_strength,
        shape_strength=shape_strength,
        servers=servers,
    )


def estimate_from_ratios(
    job: np.ndarray,
    server: np.ndarray,
    it: np.ndarray,
    r: np.ndarray,
    *,
    half_life: float = HALF_LIFE,
    prior_strength: float = PRIOR_STRENGTH,
    shape_strength: float = SHAPE_STRENGTH,
    servers: Iterable[Any] = (),
    weights: np.ndarray | None = None,
) -> tuple[dict[Any, ServerEstimate], Slowdown]:
    """:func:`estimate_from_logs` from ratios already computed (:func:`ratios`): for a
    caller that observes whole iterations at once, such as the simulator.  ``weights``
    (one per row, times the recency weight) say how much of an independent observation each
    row is: rows that repeat one look, or looks close in time, count for less against the
    priors."""
    if not half_life > 0 or not prior_strength >= 0 or not shape_strength > 0:
        raise ValueError("half_life and shape_strength must be > 0, prior_strength >= 0 (0: empirical)")
    b = bin_index(r)
    nb = len(BIN_EDGES) + 1
    values = bin_values(r, b)
    # recency: age in iterations of the server's own job
    if len(job):
        _, j_inv = np.unique(job, return_inverse=True)
        last = np.full(int(j_inv.max()) + 1, -np.inf)
        np.maximum.at(last, j_inv, np.trunc(np.asarray(it, dtype=float)))
        age = last[j_inv] - np.asarray(it, dtype=float)
    else:
        age = np.zeros(0)
    w = 0.5 ** (age / half_life)
    if weights is not None:
        w = w * np.asarray(weights, dtype=float)
    srv_ids = list(dict.fromkeys(server.tolist() + list(servers)))
    uniq_s, first, s_inv = np.unique(server, return_index=True, return_inverse=True)
    s_inv = s_inv.reshape(-1)
    S = len(uniq_s)
    n_all = np.bincount(s_inv, minlength=S)
    # each logged server's slow share, averaged in the order the servers first appear
    rates = (np.bincount(s_inv, weights=(b > 0), minlength=S) / np.maximum(n_all, 1))[np.argsort(first)]
    fleet_rate = float(np.mean(rates)) if len(rates) else 0.0
    fleet_shape = np.bincount(b[b > 0], minlength=nb)[1:].astype(float)
    fleet_shape = fleet_shape / fleet_shape.sum() if fleet_shape.sum() else np.full(nb - 1, 1.0 / (nb - 1))
    slow_w = np.where(b > 0, w, 0.0)
    n_eff_all = np.bincount(s_inv, weights=w, minlength=S)
    k_eff_all = np.bincount(s_inv, weights=slow_w, minlength=S)
    if prior_strength == EMPIRICAL:
        prior_strength = empirical_strength(k_eff_all, n_eff_all)
    a0, b0 = prior_strength * fleet_rate, prior_strength * (1 - fleet_rate)

    def dist(p: float, shape: np.ndarray) -> Slowdown:
        probs = np.concatenate(([1 - p], p * shape))
        keep = probs > 1e-9
        v, q = values[keep], probs[keep]
        q = np.round(q / q.sum(), 6)
        q[int(np.argmax(q))] += 1.0 - q.sum()
        return Slowdown(tuple(float(round(x, 4)) for x in v), tuple(float(x) for x in q))

    fleet = dist(fleet_rate, fleet_shape)
    # per server at once: logged iterations, their weight, the slow ones' weight by bin
    counts_all = np.bincount(s_inv * nb + b, weights=slow_w, minlength=S * nb).reshape(S, nb)[:, 1:]
    pos = {sid: i for i, sid in enumerate(uniq_s.tolist())}
    out: dict[Any, ServerEstimate] = {}
    for s in srv_ids:
        i = pos.get(s)
        n, n_eff, k_eff = (0, 0.0, 0.0) if i is None else (int(n_all[i]), float(n_eff_all[i]), float(k_eff_all[i]))
        counts = np.zeros(nb - 1) if i is None else counts_all[i]
        p = (k_eff + a0) / (n_eff + a0 + b0) if (n_eff + a0 + b0) > 0 else fleet_rate
        shape = (counts + shape_strength * fleet_shape) / (counts.sum() + shape_strength)
        out[s] = ServerEstimate(str(s), n, n_eff, float(p), dist(float(p), shape))
    return out, fleet

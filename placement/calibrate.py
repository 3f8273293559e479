"""Calibrate a job's compute and communication from profiles (``placement calibrate``).

A profile row is a job's measured step time at one placement: the GPUs it used on each server
and its per-GPU batch size.  Pollux's ``placements.csv`` columns are read as they are
(``placement`` as one digit of GPUs per node, ``local_bsz``, ``step_time`` in seconds; its
``sync_time`` is not needed), and so is a plain CSV with the same columns whose ``placement``
lists the GPUs on each server separated by ``+`` (``4+4+2``).

The model is DESIGN.md's: ``step = compute(batch) + C``, with ``C`` the all-reduce over the ``W``
GPUs on ``k`` servers: the ring ``2 (W - 1) / W * g_level`` (``g = 8 G / B`` at the level's
bandwidth: inside one server, or between servers), plus, by :data:`FORMS`, a latency per ring
step ``alpha_level * 2 (W - 1)`` and the inter-server stage of a hierarchical all-reduce
``gamma * 2 (k - 1) / k``.  Each form is fitted by least squares on relative errors, the
communication terms kept non-negative (a term the data would make negative is dropped), and
judged by its median relative error on the rows it was not fitted on: each server count of two
or more held out in turn (leave one node count out).  The plain ring is kept unless another form
predicts the held-out rows better.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from placement.errors import InvalidInputError
from placement.model.catalog import MODELS
from placement.model.records import CommTerm, Instance, Job, Link, Server, Switch
from placement.model.tolerances import FIT_TIE_ATOL

__all__ = [
    "FORMS",
    "DEFAULT_GRADIENT_MB",
    "DEFAULT_FORM",
    "Profiles",
    "ProfileError",
    "Fit",
    "Calibration",
    "read_profiles",
    "fit",
    "predict",
    "relative_errors",
    "holdout_error",
    "calibrate",
]

FORMS = ("ring", "ring+alpha", "ring+gamma", "ring+alpha+gamma")
"""The communication forms compared: the plain ring, with a latency per ring step, with the
inter-server stage of a hierarchical all-reduce, and with both."""
DEFAULT_FORM = "ring+gamma"
"""The form kept when the profiles cannot tell (fewer than two server counts of two or more to
hold out): on the four Pollux jobs, fitted on their one- and two-server rows, it predicts the
three- and four-server rows at a median error of 0.49-0.71x the plain ring's
(``python -m placement.bench calibrate``)."""
DEFAULT_GRADIENT_MB = 100.0
"""The gradient of a model the catalogue does not know (only ``G / B`` is fitted: the written
bandwidths are scaled to it)."""
FREE_GBPS = 1e6
"""The bandwidth written for a level whose fitted ring time is zero (communication there free)."""


class ProfileError(InvalidInputError):
    kind = "profiles"


@dataclass(frozen=True)
class Profiles:
    """Profile rows: GPUs on each server, per-GPU batch size, step time (ms)."""

    gpus: tuple[tuple[int, ...], ...]
    batch: np.ndarray
    step_ms: np.ndarray

    @property
    def workers(self) -> np.ndarray:
        return np.array([sum(g) for g in self.gpus])

    @property
    def servers(self) -> np.ndarray:
        return np.array([len(g) for g in self.gpus])

    def subset(self, keep: np.ndarray) -> Profiles:
        idx = np.flatnonzero(keep)
        return Profiles(tuple(self.gpus[i] for i in idx), self.batch[idx], self.step_ms[idx])


def _placement(text: str) -> tuple[int, ...] | None:
    """``4+4+2`` or Pollux's digits (``442``): GPUs on each server."""
    text = text.strip()
    parts = text.split("+") if "+" in text else list(text)
    try:
        g = tuple(int(p) for p in parts)
    except ValueError:
        return None
    return g if g and all(x > 0 for x in g) else None


def read_profiles(path: str | os.PathLike[str]) -> Profiles:
    """Profile rows from a CSV (columns ``placement, local_bsz, step_time``); every bad row is
    refused with its line number, all at once."""
    from placement.estimate.csvrows import csv_text, raise_problems

    p = Path(path)
    f = csv_text(p, ProfileError)
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in ("placement", "local_bsz", "step_time") if c not in header]
        if missing:
            raise ProfileError(
                [f"{p.name}: missing column(s) {', '.join(missing)}; the header has {header}"], source=str(p)
            )
        gpus: list[tuple[int, ...]] = []
        batch: list[int] = []
        step: list[float] = []
        problems: list[str] = []
        for line, row in enumerate(reader, start=2):
            bad = []
            g = _placement(row.get("placement") or "")
            if g is None:
                bad.append(
                    f"placement must list GPUs per server (digits, or counts joined by '+'), got {row.get('placement')!r}"
                )
            try:
                b = float(row.get("local_bsz") or "")
                if not (math.isfinite(b) and b > 0 and b == int(b)):
                    raise ValueError
            except ValueError:
                bad.append(f"local_bsz must be a whole number > 0, got {row.get('local_bsz')!r}")
                b = 0.0
            try:
                t = float(row.get("step_time") or "")
                if not (math.isfinite(t) and t > 0):
                    raise ValueError
            except ValueError:
                bad.append(f"step_time must be a number of seconds > 0, got {row.get('step_time')!r}")
                t = 0.0
            if bad:
                problems.append(f"{p.name} line {line}: " + "; ".join(bad))
                continue
            assert g is not None
            gpus.append(g)
            batch.append(int(b))
            step.append(1000.0 * t)
    raise_problems(problems, str(p), ProfileError)
    if not step:
        raise ProfileError([f"{p.name}: no rows"], source=str(p))
    return Profiles(tuple(gpus), np.array(batch, dtype=np.int64), np.array(step))


@dataclass(frozen=True)
class Fit:
    """A form's fitted figures (ms): compute per batch size, and the communication terms."""

    form: str
    compute_ms: dict[int, float]
    ring_intra_ms: float
    """``g = 8 G / B`` inside one server: the ring takes ``2 (W - 1) / W * g``."""
    ring_inter_ms: float
    alpha_intra_ms: float = 0.0
    alpha_inter_ms: float = 0.0
    gamma_ms: float = 0.0


_TERMS = ("ring_intra_ms", "ring_inter_ms", "alpha_intra_ms", "alpha_inter_ms", "gamma_ms")


def _design(p: Profiles, batches: Sequence[int]) -> np.ndarray:
    """Columns: one per batch size (compute), then the terms of :data:`_TERMS`."""
    W, k = p.workers.astype(float), p.servers
    X = np.zeros((len(p.step_ms), len(batches) + len(_TERMS)))
    col = {b: i for i, b in enumerate(batches)}
    X[np.arange(len(p.batch)), [col[int(b)] for b in p.batch]] = 1.0
    ring = np.where(W > 1, 2.0 * (W - 1) / np.maximum(W, 1), 0.0)
    alpha = 2.0 * (W - 1)
    n = len(batches)
    X[:, n + 0] = np.where(k == 1, ring, 0.0)
    X[:, n + 1] = np.where(k > 1, ring, 0.0)
    X[:, n + 2] = np.where(k == 1, alpha, 0.0)
    X[:, n + 3] = np.where(k > 1, alpha, 0.0)
    X[:, n + 4] = np.where(k > 1, 2.0 * (k - 1) / np.maximum(k, 1), 0.0)
    return X


def _columns(form: str) -> tuple[str, ...]:
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    cols = ["ring_intra_ms", "ring_inter_ms"]
    if "alpha" in form:
        cols += ["alpha_intra_ms", "alpha_inter_ms"]
    if "gamma" in form:
        cols.append("gamma_ms")
    return tuple(cols)


def fit(p: Profiles, form: str = "ring") -> Fit:
    """Least squares on relative errors.  The ring and ``alpha`` terms are non-negative (a term
    the data would make negative is dropped, set to 0, and the rest refitted); ``gamma`` may be
    negative (a spread job communicating less than its ring) but not below ``-g`` between
    servers, which keeps every all-reduce of this job non-negative (else it is dropped)."""
    batches = sorted({int(b) for b in p.batch})
    X = _design(p, batches)
    n = len(batches)
    active = [n + _TERMS.index(c) for c in _columns(form)]
    w = 1.0 / p.step_ms
    while True:
        cols = list(range(n)) + active
        A = X[:, cols] * w[:, None]
        used = np.abs(A).sum(axis=0) > 0
        sol = np.zeros(len(cols))
        sol[used] = np.linalg.lstsq(A[:, used], p.step_ms * w, rcond=None)[0]
        coef = np.zeros(X.shape[1])
        coef[cols] = sol
        g_col = n + _TERMS.index("gamma_ms")
        negative = [c for c in active if coef[c] < 0 and c != g_col]
        if g_col in active and coef[g_col] < -coef[n + 1] * (1 - 1e-9):
            negative.append(g_col)
        if not negative:
            break
        active.remove(min(negative, key=lambda c: coef[c]))
    return Fit(
        form,
        {b: float(coef[i]) for i, b in enumerate(batches)},
        **{t: float(coef[n + i]) for i, t in enumerate(_TERMS)},
    )


def predict(f: Fit, p: Profiles) -> np.ndarray:
    """Step times (ms) ``f`` predicts for the rows of ``p`` (a batch size it was not fitted on:
    NaN)."""
    batches = sorted(f.compute_ms)
    known = np.isin(p.batch, batches)
    out = np.full(len(p.step_ms), np.nan)
    if not known.any():
        return out
    q = p.subset(known)
    X = _design(q, batches)
    coef = np.array([f.compute_ms[b] for b in batches] + [getattr(f, t) for t in _TERMS])
    out[known] = X @ coef
    return out


def relative_errors(f: Fit, p: Profiles) -> np.ndarray:
    """``|predicted - measured| / measured`` of every row ``f`` can predict."""
    e = np.abs(predict(f, p) - p.step_ms) / p.step_ms
    return e[np.isfinite(e)]


def holdout_error(p: Profiles, form: str) -> float:
    """The median relative error of ``form`` on rows it was not fitted on: each server count of
    two or more held out in turn, fitted on the other rows (NaN with fewer than two counts)."""
    k = p.servers
    errs = []
    for held in sorted(set(k.tolist()) - {1}):
        train, test = p.subset(k != held), p.subset(k == held)
        if (train.servers > 1).any():  # the terms between servers must be fitted on something
            errs.append(relative_errors(fit(train, form), test))
    return float(np.median(np.concatenate(errs))) if errs and sum(len(e) for e in errs) else math.nan


@dataclass(frozen=True)
class Calibration:
    """The chosen form, every form's held-out error, its fit on every row, and the instance."""

    form: str
    errors: dict[str, float]
    fit: Fit
    instance: Instance
    notes: list[str] = field(default_factory=list)


def calibrate(
    p: Profiles,
    *,
    model: str,
    gpus_per_server: int,
    servers: int | None = None,
    gradient_mb: float | None = None,
    gpu_type: str = "A100",
    form: str | None = None,
) -> Calibration:
    """Compare the :data:`FORMS` by their held-out error, keep the plain ring unless another
    predicts better (:data:`DEFAULT_FORM` when they cannot be compared; or ``form``), fit it on every row and write a ``placement-instance/1``:
    ``servers`` (default: the widest profiled placement's count) of ``gpus_per_server`` GPUs under
    one switch at the fitted bandwidths, the fitted terms (``comm_terms``), and one job
    ``<model>-b<batch>`` per batch size with 1 worker, its fitted compute and the gradient
    (``gradient_mb``, else the catalogue's for ``model``, else :data:`DEFAULT_GRADIENT_MB`)."""
    problems = []
    if gpus_per_server < 1:
        problems.append(f"gpus_per_server must be >= 1, got {gpus_per_server}")
    if servers is not None and servers < 1:
        problems.append(f"servers must be >= 1, got {servers}")
    if gradient_mb is not None and not (math.isfinite(gradient_mb) and gradient_mb > 0):
        problems.append(f"gradient_mb must be a number > 0, got {gradient_mb}")
    if form is not None and form not in FORMS:
        problems.append(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    widest = max(max(g) for g in p.gpus)
    if widest > gpus_per_server:
        problems.append(f"a profiled placement has {widest} GPUs on one server; gpus_per_server is {gpus_per_server}")
    if problems:
        raise InvalidInputError(problems)
    errors = {f: holdout_error(p, f) for f in FORMS}
    notes: list[str] = []
    if form is None:
        form = "ring"
        least = min((errors[f] for f in FORMS if math.isfinite(errors[f])), default=math.inf)
        # the simplest form within rounding of the least error (an exact fit is exact in every
        # form that contains it, and which of them rounds lower is the BLAS's choice)
        best = next((f for f in FORMS if errors[f] <= least + FIT_TIE_ATOL), "ring")
        if math.isfinite(errors["ring"]) and best != "ring":
            form = best
        elif not math.isfinite(errors["ring"]):
            form = DEFAULT_FORM
            notes.append(
                f"fewer than two server counts of two or more to hold out: the default form {DEFAULT_FORM} "
                "(chosen on the Pollux profiles)"
            )
    f = fit(p, form)
    G = gradient_mb if gradient_mb is not None else (MODELS[model][1] if model in MODELS else DEFAULT_GRADIENT_MB)
    if gradient_mb is None and model not in MODELS:
        notes.append(
            f"model {model!r} is not in the catalogue: gradient {DEFAULT_GRADIENT_MB:g} MB (give --gradient-mb)"
        )

    def gbps(ring_ms: float) -> float:
        return min(FREE_GBPS, 8.0 * G / ring_ms) if ring_ms > 0 else FREE_GBPS

    b_intra, b_inter = gbps(f.ring_intra_ms), gbps(f.ring_inter_ms)
    if b_intra == b_inter:  # one level would carry both sets of terms: keep them apart
        b_intra = math.nextafter(b_intra, math.inf)
    n = servers if servers is not None else max(len(g) for g in p.gpus)
    srv = tuple(Server(f"n{i}", gpus_per_server, gpu_type, b_intra) for i in range(n))
    terms = []
    if f.alpha_intra_ms > 0:
        terms.append(CommTerm(b_intra, alpha_ms=f.alpha_intra_ms))
    if f.alpha_inter_ms > 0 or f.gamma_ms != 0:
        terms.append(CommTerm(b_inter, alpha_ms=f.alpha_inter_ms, gamma_ms=f.gamma_ms))
    jobs = tuple(Job(f"{model}-b{b}", 1, max(c, 1e-6), G) for b, c in sorted(f.compute_ms.items()))
    inst = Instance(
        name=f"{model}-calibrated",
        servers=srv,
        jobs=jobs,
        switches=(Switch("tor"),),
        links=tuple(Link(s.id, "tor", b_inter) for s in srv),
        source=f"placement calibrate --model {model} --gpus-per-server {gpus_per_server} (form {form})",
        comm_terms=tuple(terms),
    )
    from placement.formats.instance import checked

    return Calibration(form, errors, f, checked(inst), notes)

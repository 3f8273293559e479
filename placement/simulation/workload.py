"""Job arrival traces for the simulator: three CSV formats read into :class:`TraceJob`
records, then windowed, truncated, scaled and resampled into a :class:`Workload`.

Formats (``format="auto"`` tells them apart by the header):

- **elasticflow**: the Microsoft ElasticFlow traces (``job_id, submission_time,
  num_iteration, model_name, deadline, batch_size, num_gpu, duration``; absolute seconds).
  The trace's own time per iteration (``duration / num_iteration``) is the compute time;
  the gradient size comes from :data:`MODELS`.  Two are bundled
  (:func:`elasticflow_trace_path`).
- **philly**: ``timestamp`` (ISO 8601), ``duration`` (s, at ideal speed), ``num_gpus``, and
  optionally ``cluster``, ``job_id``, ``model``.  The iteration count is derived from the
  duration and the model's ideal iteration time on one NVLink server
  (:func:`ideal_iteration_ms`).
- **plain**: ``submit_s, workers`` and ``duration_s`` or ``iterations``; optionally ``id``,
  ``model``, ``compute_ms``, ``gradient_mb``, ``deadline_s``, ``weight``.

Every bad row is reported at once with its line number (the header is line 1) and its
column, in a :class:`TraceError`.  Default ids (``philly-<n>``, ``job-<n>``) use the same
line number.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from types import MappingProxyType

import numpy as np

from placement.errors import InvalidInputError
from placement.formats.cells import CellError, cell_number
from placement.instances.traces import ELASTICFLOW_MODELS
from placement.model.records import Job
from placement.problem.rules import comm_ms

__all__ = [
    "TraceJob",
    "Workload",
    "MODELS",
    "DEFAULT_MODEL",
    "CONSOLIDATED_GBPS",
    "MAX_LISTED",
    "FORMATS",
    "TraceError",
    "ideal_iteration_ms",
    "read_trace",
    "read_elasticflow",
    "read_philly",
    "read_plain",
    "apply_options",
    "elasticflow_trace_path",
    "bundled_traces",
    "resolve_trace",
]

WIDER = "wider than the cluster"
"""The key of :attr:`Workload.dropped` for jobs dropped by ``drop_wider``."""

MAX_LISTED = 40
"""Most problems listed in one error (the rest are counted)."""

CONSOLIDATED_GBPS = 2400.0
"""All-reduce bandwidth (Gbit/s) of a consolidated placement: one 8-GPU server with NVLink.
A trace that gives run times rather than iterations is read as running at this speed."""

DEFAULT_MODEL = "resnet50"
"""The model of a Philly or plain row that names none."""

# model -> (compute ms per iteration on one A100-class GPU at a typical per-GPU batch,
# gradient MB).  The gradient is the fp32 parameters (parameters x 4 bytes, in MiB): the
# ElasticFlow models' sizes are those of placement.instances.traces; resnet101 has 44.5 M
# parameters, the Transformer (base, WMT) 65 M.  The compute times are rough figures of
# the order published for these models, assumptions of the simulator, not measurements.
_COMPUTE_MS: dict[str, float] = {
    "resnet50": 100.0,
    "vgg16": 200.0,
    "inception3": 150.0,
    "bert": 300.0,
    "gpt2": 400.0,
    "deepspeech2": 250.0,
    "yolov3": 220.0,
    "resnet18": 50.0,
    "alexnet": 40.0,
    "vgg19": 230.0,
}
MODELS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        **{name: (_COMPUTE_MS[name], mb) for name, mb in ELASTICFLOW_MODELS.items()},
        "resnet101": (170.0, 170.0),
        "transformer": (180.0, 248.0),
    }
)
"""Model name -> (compute ms per iteration at speed 1, gradient MB)."""

FORMATS = ("elasticflow", "philly", "plain")


class TraceError(InvalidInputError):
    """A trace file (or an option applied to it) is not acceptable; ``problems`` lists
    every bad row with its line number and column."""

    kind = "trace"


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: a gang of ``workers`` GPUs submitted at ``submit_s``."""

    id: str
    submit_s: float
    workers: int
    iterations: int
    compute_ms: float
    gradient_mb: float
    model: str = ""
    weight: float = 1.0
    deadline_s: float | None = None
    """Completion time allowed after submission, seconds."""
    gpu_speed: Mapping[str, float] | None = None
    architecture: str = "allreduce"
    """``allreduce`` or ``ps`` (a parameter-server job with ``ps_shards`` shards)."""
    ps_shards: int | None = None


@dataclass(frozen=True)
class Workload:
    """The jobs of a trace after the options, sorted by ``(submit_s, id)``."""

    jobs: tuple[TraceJob, ...]
    source: str
    dropped: Mapping[str, int] = field(default_factory=dict)


def ideal_iteration_ms(workers: int, compute_ms: float, gradient_mb: float) -> float:
    """Iteration time (ms) at speed 1 on a consolidated placement: compute plus the ring
    all-reduce at :data:`CONSOLIDATED_GBPS`."""
    job = Job(id="ideal", workers=workers, compute_ms=compute_ms, gradient_mb=gradient_mb)
    return compute_ms + comm_ms(job, CONSOLIDATED_GBPS)


def _iterations_from(duration_s: float, workers: int, compute_ms: float, gradient_mb: float) -> int:
    return max(1, round(duration_s * 1000.0 / ideal_iteration_ms(workers, compute_ms, gradient_mb)))


# ------------------------------------------------------------------ reading
def _fail(problems: Sequence[str], source: str | None) -> TraceError:
    more = len(problems) - MAX_LISTED
    shown = list(problems[:MAX_LISTED]) + ([f"... and {more} more"] if more > 0 else [])
    return TraceError(shown, source=source)


@dataclass
class _Table:
    path: Path
    header: list[str]
    rows: list[tuple[int, dict[str, str]]]
    problems: list[str] = field(default_factory=list)

    def require(self, *columns: str) -> None:
        missing = [c for c in columns if c not in self.header]
        if missing:
            raise _fail(
                [f"missing column(s) {', '.join(map(repr, missing))}; the header is {','.join(self.header)!r}"],
                str(self.path),
            )

    def done(self) -> None:
        if self.problems:
            raise _fail(self.problems, str(self.path))


def _load(path: str | os.PathLike[str]) -> _Table:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TraceError([f"cannot read {p}: {e.strerror or e}"], source=str(p)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TraceError(
            [f"{p.name} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})"], source=str(p)
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] = []
    rows: list[tuple[int, dict[str, str]]] = []
    problems: list[str] = []
    try:
        for cells in reader:
            if not header:
                if any(c.strip() for c in cells):
                    header = [c.strip().lower() for c in cells]
                continue
            if not any(c.strip() for c in cells):
                continue
            line = reader.line_num
            extra = [c for c in cells[len(header) :] if c.strip()]
            if extra:
                problems.append(f"row {line}: {len(cells)} fields, the header has {len(header)}")
            rows.append((line, {h: c.strip() for h, c in zip(header, cells)}))
    except csv.Error as e:
        problems.append(f"row {reader.line_num}: {e}")
    if not header:
        raise TraceError([f"{p.name} is empty"], source=str(p))
    if not rows and not problems:
        raise TraceError([f"{p.name} has a header but no rows"], source=str(p))
    return _Table(p, header, rows, problems)


class _Row:
    """The cells of one row and the problems found in them (added to the table's)."""

    def __init__(self, table: _Table, line: int, cells: dict[str, str]) -> None:
        self.line = line
        self.cells = cells
        self.problems = table.problems
        self.ok = True

    def bad(self, column: str, message: str) -> None:
        self.problems.append(f"row {self.line}, {column}: {message}")
        self.ok = False

    def text(self, column: str) -> str:
        return self.cells.get(column) or ""

    def number(self, column: str, *, positive: bool = False, required: bool = True) -> float | None:
        raw = self.text(column)
        if not raw:
            if required:
                self.bad(column, "missing value")
            return None
        try:
            return cell_number(raw, minimum=0, exclusive_minimum=positive)
        except CellError as e:
            self.bad(column, str(e))
            return None

    def count(self, column: str, *, required: bool = True) -> int | None:
        raw = self.text(column)
        if not raw:
            if required:
                self.bad(column, "missing value")
            return None
        try:
            return int(cell_number(raw, integer=True, minimum=1))
        except CellError as e:
            self.bad(column, str(e))
            return None

    def model(self, column: str, *, needed: bool = True) -> str:
        name = self.text(column) or DEFAULT_MODEL
        if needed and name not in MODELS:
            self.bad(column, f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
        return name

    def timestamp(self, column: str) -> datetime | None:
        raw = self.text(column)
        if not raw:
            self.bad(column, "missing value")
            return None
        try:
            t = datetime.fromisoformat(raw[:-1] + "+00:00" if raw[-1] in "zZ" else raw)
        except ValueError:
            self.bad(column, f"not an ISO 8601 time, got {raw!r}")
            return None
        return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def _unique_ids(table: _Table, ids: Iterable[tuple[int, str, str]]) -> None:
    seen: dict[str, int] = {}
    for line, column, jid in ids:
        if jid in seen:
            table.problems.append(f"row {line}, {column}: id {jid!r} repeats row {seen[jid]}")
        else:
            seen[jid] = line


def _elasticflow(table: _Table) -> list[TraceJob]:
    table.require("job_id", "submission_time", "num_iteration", "model_name", "num_gpu", "duration")
    jobs: list[TraceJob] = []
    lines: list[int] = []
    for line, cells in table.rows:
        r = _Row(table, line, cells)
        jid = r.text("job_id")
        if not jid:
            r.bad("job_id", "missing value")
        submit = r.number("submission_time")
        iters = r.count("num_iteration")
        model = r.model("model_name")
        workers = r.count("num_gpu")
        duration = r.number("duration", positive=True)
        deadline = r.number("deadline", required=False)
        if not r.ok:
            continue
        assert submit is not None and iters is not None and workers is not None and duration is not None
        jobs.append(
            TraceJob(
                id=jid,
                submit_s=submit,
                workers=workers,
                iterations=iters,
                compute_ms=1000.0 * duration / iters,
                gradient_mb=MODELS[model][1],
                model=model,
                deadline_s=deadline - submit if deadline is not None and deadline > submit else None,
            )
        )
        lines.append(line)
    _unique_ids(table, ((ln, "job_id", j.id) for ln, j in zip(lines, jobs)))
    table.done()
    return jobs


def _philly(table: _Table, cluster: str | None) -> list[TraceJob]:
    table.require("timestamp", "duration", "num_gpus")
    if cluster is not None:
        if "cluster" not in table.header:
            raise _fail([f"a cluster ({cluster!r}) is asked for but the file has no 'cluster' column"], str(table.path))
        found = sorted({c.get("cluster", "") for _, c in table.rows})
        table.rows = [(ln, c) for ln, c in table.rows if c.get("cluster") == cluster]
        if not table.rows:
            raise _fail(
                [f"no rows of cluster {cluster!r}; the file has {', '.join(map(repr, found))}"], str(table.path)
            )
    has_id = "job_id" in table.header
    parsed: list[tuple[int, str, datetime, int, str, float]] = []
    for line, cells in table.rows:
        r = _Row(table, line, cells)
        t = r.timestamp("timestamp")
        duration = r.number("duration")
        workers = r.count("num_gpus")
        model = r.model("model")
        if not r.ok:
            continue
        assert t is not None and duration is not None and workers is not None
        jid = (r.text("job_id") if has_id else "") or f"philly-{line}"
        parsed.append((line, jid, t, workers, model, duration))
    _unique_ids(table, ((ln, "job_id", jid) for ln, jid, *_ in parsed))
    table.done()
    start = min(t for _, _, t, *_ in parsed)
    jobs = []
    for _, jid, t, workers, model, duration in parsed:
        compute, gradient = MODELS[model]
        jobs.append(
            TraceJob(
                id=jid,
                submit_s=(t - start).total_seconds(),
                workers=workers,
                iterations=_iterations_from(duration, workers, compute, gradient),
                compute_ms=compute,
                gradient_mb=gradient,
                model=model,
            )
        )
    return jobs


def _plain(table: _Table) -> list[TraceJob]:
    table.require("submit_s", "workers")
    if "duration_s" not in table.header and "iterations" not in table.header:
        raise _fail(
            [f"missing column 'duration_s' or 'iterations' (one is needed); the header is {','.join(table.header)!r}"],
            str(table.path),
        )
    jobs: list[TraceJob] = []
    lines: list[int] = []
    for line, cells in table.rows:
        r = _Row(table, line, cells)
        submit = r.number("submit_s")
        workers = r.count("workers")
        iters = r.count("iterations", required=False)
        duration = r.number("duration_s", required=False)
        if not r.text("iterations") and not r.text("duration_s"):
            r.bad("duration_s/iterations", "one of them is needed, both are empty")
        compute = r.number("compute_ms", positive=True, required=False)
        gradient = r.number("gradient_mb", required=False)
        model = r.model("model", needed=compute is None or gradient is None)
        deadline = r.number("deadline_s", positive=True, required=False)
        weight = r.number("weight", required=False)
        arch = r.text("architecture") or "allreduce"
        if arch not in ("allreduce", "ps"):
            r.bad("architecture", f"must be allreduce or ps, got {arch!r}")
        shards = r.count("ps_shards", required=False)
        if arch == "ps" and shards is None and r.ok:
            r.bad("ps_shards", "is required for a parameter-server job (architecture ps)")
        if arch != "ps" and shards is not None:
            r.bad("ps_shards", "is only for parameter-server jobs (architecture ps)")
        if not r.ok:
            continue
        assert submit is not None and workers is not None
        compute = compute if compute is not None else MODELS[model][0]
        gradient = gradient if gradient is not None else MODELS[model][1]
        if iters is None:
            assert duration is not None
            iters = _iterations_from(duration, workers, compute, gradient)
        jobs.append(
            TraceJob(
                id=r.text("id") or f"job-{line}",
                submit_s=submit,
                workers=workers,
                iterations=iters,
                compute_ms=compute,
                gradient_mb=gradient,
                model=model,
                weight=1.0 if weight is None else weight,
                deadline_s=deadline,
                architecture=arch,
                ps_shards=shards if arch == "ps" else None,
            )
        )
        lines.append(line)
    _unique_ids(table, ((ln, "id", j.id) for ln, j in zip(lines, jobs)))
    table.done()
    return jobs


def _detect(table: _Table) -> str:
    h = set(table.header)
    if {"submission_time", "num_iteration"} <= h:
        return "elasticflow"
    if {"timestamp", "num_gpus"} <= h:
        return "philly"
    if "submit_s" in h:
        return "plain"
    raise TraceError(
        [
            f"unknown trace format: the header is {','.join(table.header)!r}; accepted: elasticflow "
            "(job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration), "
            "philly (timestamp,duration,num_gpus[,cluster,job_id,model]), "
            "plain (submit_s,workers,duration_s|iterations[,id,model,compute_ms,gradient_mb,deadline_s,weight])"
        ],
        source=str(table.path),
    )


def read_elasticflow(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of an ElasticFlow trace, in file order, no option applied (absolute
    submission times; ``deadline_s`` relative to submission, ``None`` when the trace's
    deadline is not after the submission)."""
    return _elasticflow(_load(path))


def read_philly(path: str | os.PathLike[str], *, cluster: str | None = None) -> list[TraceJob]:
    """The jobs of a Philly-style trace, in file order (only those of ``cluster`` when
    given); ``submit_s`` counts from the earliest timestamp kept."""
    return _philly(_load(path), cluster)


def read_plain(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of a plain CSV trace, in file order, no option applied."""
    return _plain(_load(path))


# ------------------------------------------------------------------ options
def _check(caller: str, name: str, value: object, ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"The {name!r} parameter of {caller} must be {what}. Got {value!r} instead.")


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(float(v))


def _validate(
    caller: str,
    window_start_s: float,
    window_s: float | None,
    max_jobs: int | None,
    load: float,
    resample_seed: int | None,
    max_workers: int | None,
) -> None:
    _check(
        caller, "window_start_s", window_start_s, _is_number(window_start_s) and window_start_s >= 0, "a number >= 0"
    )
    _check(caller, "window_s", window_s, window_s is None or (_is_number(window_s) and window_s > 0), "a number > 0")
    _check(caller, "max_jobs", max_jobs, max_jobs is None or (_is_int(max_jobs) and max_jobs >= 1), "an int >= 1")
    _check(caller, "load", load, _is_number(load) and load > 0, "a number > 0")
    _check(caller, "resample_seed", resample_seed, resample_seed is None or _is_int(resample_seed), "an int or None")
    _check(
        caller,
        "max_workers",
        max_workers,
        max_workers is None or (_is_int(max_workers) and max_workers >= 1),
        "an int >= 1",
    )


def _g(x: float) -> str:
    return f"{x:g}"


def _apply(
    jobs: Iterable[TraceJob],
    *,
    caller: str,
    window_start_s: float,
    window_s: float | None,
    max_jobs: int | None,
    load: float,
    resample_seed: int | None,
    max_workers: int | None,
    drop_wider: bool,
    source: str,
    error_source: str | None,
    ps_fraction: float = 0.0,
    ps_shards: int = 2,
    ps_seed: int = 0,
) -> Workload:
    _validate(caller, window_start_s, window_s, max_jobs, load, resample_seed, max_workers)
    _check(caller, "ps_fraction", ps_fraction, _is_number(ps_fraction) and 0 <= ps_fraction <= 1, "a number in [0, 1]")
    _check(caller, "ps_shards", ps_shards, _is_int(ps_shards) and ps_shards >= 1, "an int >= 1")
    _check(caller, "ps_seed", ps_seed, _is_int(ps_seed) and ps_seed >= 0, "an int >= 0")
    notes = [source] if source else []
    out = sorted(jobs, key=lambda j: (j.submit_s, j.id))
    if window_start_s or window_s is not None:
        end = math.inf if window_s is None else window_start_s + window_s
        out = [replace(j, submit_s=j.submit_s - window_start_s) for j in out if window_start_s <= j.submit_s < end]
        notes.append(
            f"window from {_g(window_start_s)} s" if window_s is None else f"window {_g(window_start_s)}-{_g(end)} s"
        )
    if max_jobs is not None:
        out = out[:max_jobs]
        notes.append(f"first {max_jobs} jobs")
    if load != 1:
        out = [replace(j, submit_s=j.submit_s / load) for j in out]
        notes.append(f"load x{_g(load)}")
    if resample_seed is not None:
        out = _resample(out, resample_seed)
        notes.append(f"Poisson resampled (seed {resample_seed})")
    dropped: dict[str, int] = {}
    if max_workers is not None:
        wide = [j for j in out if j.workers > max_workers]
        if wide and not drop_wider:
            raise _fail(
                [f"job {j.id!r} needs {j.workers} GPUs; the cluster has {max_workers}" for j in wide], error_source
            )
        if wide:
            out = [j for j in out if j.workers <= max_workers]
            dropped[WIDER] = len(wide)
            notes.append(f"dropped {len(wide)} {WIDER}")
    if ps_fraction > 0:
        pick = np.random.default_rng(ps_seed).random(len(out)) < ps_fraction
        out = [
            replace(j, architecture="ps", ps_shards=ps_shards) if p and j.architecture != "ps" else j
            for j, p in zip(out, pick)
        ]
        notes.append(f"{_g(100 * ps_fraction)}% parameter-server jobs of {ps_shards} shards (seed {ps_seed})")
    return Workload(jobs=tuple(out), source="; ".join(notes), dropped=dropped)


def _resample(jobs: list[TraceJob], seed: int) -> list[TraceJob]:
    if len(jobs) < 2:
        return jobs
    first, span = jobs[0].submit_s, jobs[-1].submit_s - jobs[0].submit_s
    if span <= 0:
        return jobs
    gaps = np.random.default_rng(seed).exponential(span / len(jobs), size=len(jobs) - 1)
    times = first + np.concatenate(([0.0], np.cumsum(gaps)))
    return [replace(j, submit_s=float(t)) for j, t in zip(jobs, times)]


def apply_options(
    jobs: Iterable[TraceJob],
    *,
    window_start_s: float = 0.0,
    window_s: float | None = None,
    max_jobs: int | None = None,
    load: float = 1.0,
    resample_seed: int | None = None,
    max_workers: int | None = None,
    drop_wider: bool = False,
    source: str = "",
    ps_fraction: float = 0.0,
    ps_shards: int = 2,
    ps_seed: int = 0,
) -> Workload:
    """Jobs sorted by ``(submit_s, id)``, then, in this order: kept in the window
    ``[window_start_s, window_start_s + window_s)`` and shifted to start at 0; the first
    ``max_jobs``; submit times divided by ``load``; inter-arrival times redrawn i.i.d.
    exponential at the same mean rate (jobs / span) with ``numpy.random.default_rng(
    resample_seed)``, first submission and order kept; jobs wider than ``max_workers``
    refused (:class:`TraceError`) or, with ``drop_wider``, dropped and counted; a
    ``ps_fraction`` share of the jobs (drawn with ``numpy.random.default_rng(ps_seed)``) made
    parameter-server jobs of ``ps_shards`` shards.

    ``source`` starts :attr:`Workload.source`; the options applied are appended.
    Raises ``ValueError`` on a bad option value."""
    return _apply(
        jobs,
        caller="apply_options",
        window_start_s=window_start_s,
        window_s=window_s,
        max_jobs=max_jobs,
        load=load,
        resample_seed=resample_seed,
        max_workers=max_workers,
        drop_wider=drop_wider,
        source=source,
        error_source=source or None,
        ps_fraction=ps_fraction,
        ps_shards=ps_shards,
        ps_seed=ps_seed,
    )


def read_trace(
    path: str | os.PathLike[str],
    *,
    format: str = "auto",
    window_start_s: float = 0.0,
    window_s: float | None = None,
    max_jobs: int | None = None,
    load: float = 1.0,
    resample_seed: int | None = None,
    max_workers: int | None = None,
    drop_wider: bool = False,
    ps_fraction: float = 0.0,
    ps_shards: int = 2,
    ps_seed: int = 0,
) -> Workload:
    """Read a trace (``format``: ``auto``, ``elasticflow``, ``philly`` or ``plain``; ``path``
    a file or a bundled name, :func:`resolve_trace`) and apply the options (see
    :func:`apply_options`).

    Raises :class:`TraceError` on a bad file, listing every bad row with its line
    number, and ``ValueError`` on a bad option value (checked before the file is read)."""
    if format not in ("auto", *FORMATS):
        raise ValueError(
            f"The 'format' parameter of read_trace must be one of 'auto', {', '.join(map(repr, FORMATS))}. "
            f"Got {format!r} instead."
        )
    _validate("read_trace", window_start_s, window_s, max_jobs, load, resample_seed, max_workers)
    table = _load(resolve_trace(path))
    fmt = _detect(table) if format == "auto" else format
    if fmt == "elasticflow":
        jobs = _elasticflow(table)
    elif fmt == "philly":
        jobs = _philly(table, None)
    else:
        jobs = _plain(table)
    return _apply(
        jobs,
        caller="read_trace",
        window_start_s=window_start_s,
        window_s=window_s,
        max_jobs=max_jobs,
        load=load,
        resample_seed=resample_seed,
        max_workers=max_workers,
        drop_wider=drop_wider,
        source=f"{fmt} {table.path.name}",
        error_source=str(table.path),
        ps_fraction=ps_fraction,
        ps_shards=ps_shards,
        ps_seed=ps_seed,
    )


def _bundled_elasticflow() -> Path:
    return Path(str(resources.files("placement.instances").joinpath("traces", "elasticflow")))


def elasticflow_trace_path(name: str = "cluster03") -> Path:
    """The bundled copy of ElasticFlow trace ``name`` (``cluster03``, ``cluster04``; MIT
    licence, unchanged)."""
    folder = _bundled_elasticflow()
    names = sorted(p.stem for p in folder.glob("*.csv"))
    if name not in names:
        raise ValueError(
            f"The 'name' parameter of elasticflow_trace_path must be one of {', '.join(map(repr, names))}. "
            f"Got {name!r} instead."
        )
    return folder / f"{name}.csv"


def bundled_traces() -> list[str]:
    """Names of the bundled traces (``elasticflow-cluster03``, ``elasticflow-cluster04``)."""
    return [f"elasticflow-{p.stem}" for p in sorted(_bundled_elasticflow().glob("*.csv"))]


def resolve_trace(name_or_path: str | os.PathLike[str]) -> Path:
    """A trace file: ``name_or_path`` itself when it exists, else the bundled trace of that
    name (:func:`bundled_traces`); a path that is neither is returned as is (reading it
    reports the missing file)."""
    p = Path(name_or_path)
    text = str(name_or_path)
    if not p.exists() and text.startswith("elasticflow-") and text in bundled_traces():
        return elasticflow_trace_path(text.removeprefix("elasticflow-"))
    return p

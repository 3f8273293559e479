"""The trace formats, read row by row: ElasticFlow, Philly and plain CSV; every bad row
reported at once with its line and column."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from placement.formats.cells import CellError, cell_number
from placement.model.catalog import DEFAULT_MODEL, MODELS, PAL_MODELS
from placement.simulation.workload.records import (
    MAX_LISTED,
    TraceError,
    TraceJob,
    iterations_from,
)


def trace_error(problems: Sequence[str], source: str | None) -> TraceError:
    more = len(problems) - MAX_LISTED
    shown = list(problems[:MAX_LISTED]) + ([f"... and {more} more"] if more > 0 else [])
    return TraceError(shown, source=source)


@dataclass
class Table:
    path: Path
    header: list[str]
    rows: list[tuple[int, dict[str, str]]]
    problems: list[str] = field(default_factory=list)

    def require(self, *columns: str) -> None:
        missing = [c for c in columns if c not in self.header]
        if missing:
            raise trace_error(
                [f"missing column(s) {', '.join(map(repr, missing))}; the header is {','.join(self.header)!r}"],
                str(self.path),
            )

    def done(self) -> None:
        if self.problems:
            raise trace_error(self.problems, str(self.path))


def load_table(path: str | os.PathLike[str]) -> Table:
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
    return Table(p, header, rows, problems)


class Row:
    """The cells of one row and the problems found in them (added to the table's)."""

    def __init__(self, table: Table, line: int, cells: dict[str, str]) -> None:
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


def _unique_ids(table: Table, ids: Iterable[tuple[int, str, str]]) -> None:
    seen: dict[str, int] = {}
    for line, column, jid in ids:
        if jid in seen:
            table.problems.append(f"row {line}, {column}: id {jid!r} repeats row {seen[jid]}")
        else:
            seen[jid] = line


def elasticflow_rows(table: Table) -> list[TraceJob]:
    table.require("job_id", "submission_time", "num_iteration", "model_name", "num_gpu", "duration")
    jobs: list[TraceJob] = []
    lines: list[int] = []
    for line, cells in table.rows:
        r = Row(table, line, cells)
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
                duration_s=duration,
                deadline_s=deadline - submit if deadline is not None and deadline > submit else None,
            )
        )
        lines.append(line)
    _unique_ids(table, ((ln, "job_id", j.id) for ln, j in zip(lines, jobs)))
    table.done()
    return jobs


def philly_rows(table: Table, cluster: str | None) -> list[TraceJob]:
    table.require("timestamp", "duration", "num_gpus")
    if cluster is not None:
        if "cluster" not in table.header:
            raise trace_error(
                [f"a cluster ({cluster!r}) is asked for but the file has no 'cluster' column"], str(table.path)
            )
        found = sorted({c.get("cluster", "") for _, c in table.rows})
        table.rows = [(ln, c) for ln, c in table.rows if c.get("cluster") == cluster]
        if not table.rows:
            raise trace_error(
                [f"no rows of cluster {cluster!r}; the file has {', '.join(map(repr, found))}"], str(table.path)
            )
    has_id = "job_id" in table.header
    parsed: list[tuple[int, str, datetime, int, str, float]] = []
    for line, cells in table.rows:
        r = Row(table, line, cells)
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
                iterations=iterations_from(duration, workers, compute, gradient),
                compute_ms=compute,
                gradient_mb=gradient,
                model=model,
                duration_s=duration if duration > 0 else None,
            )
        )
    return jobs


def sia_rows(table: Table) -> list[TraceJob]:
    """The Sia-Philly workloads PAL's artifact runs (``job_id, num_gpus, submit_time, duration,
    model``): ``duration`` is the job's iteration count, each model's iteration time and
    application class PAL's (:data:`~placement.model.catalog.PAL_MODELS`); no gradient (PAL's jobs
    pay only the locality penalty)."""
    table.require("job_id", "num_gpus", "submit_time", "duration", "model")
    parsed: list[tuple[int, str, float, int, float, str]] = []
    for line, cells in table.rows:
        r = Row(table, line, cells)
        submit = r.number("submit_time")
        workers = r.count("num_gpus")
        iterations = r.number("duration", positive=True)
        model = r.text("model")
        if model not in PAL_MODELS:
            r.bad("model", f"unknown model {model!r}; PAL's: {', '.join(sorted(PAL_MODELS))}")
        if not r.ok:
            continue
        assert submit is not None and workers is not None and iterations is not None
        parsed.append((line, r.text("job_id") or f"sia-{line}", submit, workers, iterations, model))
    _unique_ids(table, ((ln, "job_id", jid) for ln, jid, *_ in parsed))
    table.done()
    return [
        TraceJob(
            id=jid,
            submit_s=submit,
            workers=workers,
            iterations=max(1, int(round(iterations))),
            compute_ms=PAL_MODELS[model][0],
            gradient_mb=0.0,
            model=model,
            app_class=PAL_MODELS[model][1],
        )
        for _, jid, submit, workers, iterations, model in parsed
    ]


def plain_rows(table: Table) -> list[TraceJob]:
    table.require("submit_s", "workers")
    if "duration_s" not in table.header and "iterations" not in table.header:
        raise trace_error(
            [f"missing column 'duration_s' or 'iterations' (one is needed); the header is {','.join(table.header)!r}"],
            str(table.path),
        )
    jobs: list[TraceJob] = []
    lines: list[int] = []
    for line, cells in table.rows:
        r = Row(table, line, cells)
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
        if arch not in ("allreduce", "ps", "hybrid"):
            r.bad("architecture", f"must be allreduce, ps or hybrid, got {arch!r}")
        degrees = {k: r.count(k, required=False) for k in ("tp", "pp", "dp", "microbatches")}
        activation = r.number("activation_mb", required=False)
        if arch == "hybrid":
            for k in ("tp", "pp", "dp"):
                if degrees[k] is None and r.ok:
                    r.bad(k, "is required for a hybrid-parallel job (architecture hybrid)")
            tp, pp, dp = degrees["tp"], degrees["pp"], degrees["dp"]
            if tp and pp and dp and workers and tp * pp * dp != workers:
                r.bad("workers", f"must equal tp * pp * dp = {tp * pp * dp}, got {workers}")
        else:
            for k in ("tp", "pp", "dp", "microbatches", "activation_mb"):
                if r.text(k):
                    r.bad(k, "is only for hybrid-parallel jobs (architecture hybrid)")
        shards = r.count("ps_shards", required=False)
        if arch == "ps" and shards is None and r.ok:
            r.bad("ps_shards", "is required for a parameter-server job (architecture ps)")
        if arch != "ps" and shards is not None:
            r.bad("ps_shards", "is only for parameter-server jobs (architecture ps)")
        if not r.ok:
            continue
        assert submit is not None and workers is not None
        # a duration is a measurement unless the row gives its own model (compute and gradient)
        measured = duration if duration and (compute is None or gradient is None) and arch == "allreduce" else None
        compute = compute if compute is not None else MODELS[model][0]
        gradient = gradient if gradient is not None else MODELS[model][1]
        if iters is None:
            assert duration is not None
            iters = iterations_from(duration, workers, compute, gradient)
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
                tp=degrees["tp"] if arch == "hybrid" else None,
                pp=degrees["pp"] if arch == "hybrid" else None,
                dp=degrees["dp"] if arch == "hybrid" else None,
                microbatches=(degrees["microbatches"] or 1) if arch == "hybrid" else 1,
                activation_mb=(activation or 0.0) if arch == "hybrid" else 0.0,
                duration_s=measured,
            )
        )
        lines.append(line)
    _unique_ids(table, ((ln, "id", j.id) for ln, j in zip(lines, jobs)))
    table.done()
    return jobs


def detect_format(table: Table) -> str:
    h = set(table.header)
    if {"submission_time", "num_iteration"} <= h:
        return "elasticflow"
    if {"timestamp", "num_gpus"} <= h:
        return "philly"
    if "submit_s" in h:
        return "plain"
    if {"submit_time", "num_gpus", "duration", "model"} <= h:
        return "sia"
    raise TraceError(
        [
            f"unknown trace format: the header is {','.join(table.header)!r}; accepted: elasticflow "
            "(job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration), "
            "philly (timestamp,duration,num_gpus[,cluster,job_id,model]), "
            "plain (submit_s,workers,duration_s|iterations[,id,model,compute_ms,gradient_mb,deadline_s,weight]), "
            "sia (job_id,num_gpus,submit_time,duration,model: PAL's Sia-Philly workloads)"
        ],
        source=str(table.path),
    )


def read_elasticflow(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of an ElasticFlow trace, in file order, no option applied (absolute
    submission times; ``deadline_s`` relative to submission, ``None`` when the trace's
    deadline is not after the submission)."""
    return elasticflow_rows(load_table(path))


def read_philly(path: str | os.PathLike[str], *, cluster: str | None = None) -> list[TraceJob]:
    """The jobs of a Philly-style trace, in file order (only those of ``cluster`` when
    given); ``submit_s`` counts from the earliest timestamp kept."""
    return philly_rows(load_table(path), cluster)


def read_plain(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of a plain CSV trace, in file order, no option applied."""
    return plain_rows(load_table(path))

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

import os

from placement.model.catalog import DEFAULT_MODEL, MODELS
from placement.simulation.workload.bundled import bundled_traces, elasticflow_trace_path, resolve_trace
from placement.simulation.workload.readers import (
    detect_format,
    elasticflow_rows,
    load_table,
    philly_rows,
    plain_rows,
    read_elasticflow,
    read_philly,
    read_plain,
    sia_rows,
)
from placement.simulation.workload.records import (
    CONSOLIDATED_GBPS,
    FORMATS,
    MAX_LISTED,
    TraceError,
    TraceJob,
    Workload,
    ideal_iteration_ms,
)
from placement.simulation.workload.transforms import apply_options, apply_to, validate_options

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
    hybrid_fraction: float = 0.0,
    hybrid_seed: int = 0,
    most_gpus: int = 8,
    min_workers: int | None = None,
    widen: int = 1,
) -> Workload:
    """Read a trace (``format``: ``auto``, ``elasticflow``, ``philly``, ``plain`` or ``sia``; ``path``
    a file or a bundled name, :func:`resolve_trace`) and apply the options (see
    :func:`apply_options`).

    Raises :class:`TraceError` on a bad file, listing every bad row with its line
    number, and ``ValueError`` on a bad option value (checked before the file is read)."""
    if format not in ("auto", *FORMATS):
        raise ValueError(
            f"The 'format' parameter of read_trace must be one of 'auto', {', '.join(map(repr, FORMATS))}. "
            f"Got {format!r} instead."
        )
    validate_options(
        "read_trace", window_start_s, window_s, max_jobs, load, resample_seed, max_workers, min_workers, widen
    )
    table = load_table(resolve_trace(path))
    fmt = detect_format(table) if format == "auto" else format
    if fmt == "elasticflow":
        jobs = elasticflow_rows(table)
    elif fmt == "philly":
        jobs = philly_rows(table, None)
    elif fmt == "sia":
        jobs = sia_rows(table)
    else:
        jobs = plain_rows(table)
    return apply_to(
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
        hybrid_fraction=hybrid_fraction,
        hybrid_seed=hybrid_seed,
        most_gpus=most_gpus,
        min_workers=min_workers,
        widen=widen,
    )

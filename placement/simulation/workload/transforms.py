"""What a workload is made of a trace's jobs: a window, a cap, a load factor, a seeded
resample, jobs wider than the cluster dropped or refused, parameter-server jobs mixed in."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from placement.simulation.workload.readers import trace_error
from placement.simulation.workload.records import WIDER, TraceJob, Workload


def _check(caller: str, name: str, value: object, ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"The {name!r} parameter of {caller} must be {what}. Got {value!r} instead.")


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(float(v))


def validate_options(
    caller: str,
    window_start_s: float,
    window_s: float | None,
    max_jobs: int | None,
    load: float,
    resample_seed: int | None,
    max_workers: int | None,
    min_workers: int | None = None,
    widen: int = 1,
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
    _check(
        caller,
        "min_workers",
        min_workers,
        min_workers is None or (_is_int(min_workers) and min_workers >= 1),
        "an int >= 1 or None",
    )
    _check(caller, "widen", widen, _is_int(widen) and widen >= 1, "an int >= 1")


def _g(x: float) -> str:
    return f"{x:g}"


def apply_to(
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
    hybrid_fraction: float = 0.0,
    hybrid_seed: int = 0,
    most_gpus: int = 8,
    min_workers: int | None = None,
    widen: int = 1,
) -> Workload:
    validate_options(caller, window_start_s, window_s, max_jobs, load, resample_seed, max_workers, min_workers, widen)
    _check(
        caller,
        "hybrid_fraction",
        hybrid_fraction,
        _is_number(hybrid_fraction) and 0 <= hybrid_fraction <= 1,
        "a number in [0, 1]",
    )
    _check(caller, "hybrid_seed", hybrid_seed, _is_int(hybrid_seed) and hybrid_seed >= 0, "an int >= 0")
    _check(caller, "most_gpus", most_gpus, _is_int(most_gpus) and most_gpus >= 1, "an int >= 1")
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
    if min_workers is not None:
        out = [j for j in out if j.workers >= min_workers]
        notes.append(f"jobs of {min_workers}+ GPUs")
    if max_jobs is not None:
        out = out[:max_jobs]
        notes.append(f"first {max_jobs} jobs")
    if load != 1:
        out = [replace(j, submit_s=j.submit_s / load) for j in out]
        notes.append(f"load x{_g(load)}")
    if resample_seed is not None:
        out = _resample(out, resample_seed)
        notes.append(f"Poisson resampled (seed {resample_seed})")
    if widen != 1:
        # weak scaling: each worker keeps its share of the work, so the trace's run time stays
        out = [replace(j, workers=j.workers * widen, dp=None if j.dp is None else j.dp * widen) for j in out]
        notes.append(f"widened x{widen}")
    dropped: dict[str, int] = {}
    if max_workers is not None:
        wide = [j for j in out if j.workers > max_workers]
        if wide and not drop_wider:
            raise trace_error(
                [f"job {j.id!r} needs {j.workers} GPUs; the cluster has {max_workers}" for j in wide], error_source
            )
        if wide:
            out = [j for j in out if j.workers <= max_workers]
            dropped[WIDER] = len(wide)
            notes.append(f"dropped {len(wide)} {WIDER}")
    if ps_fraction > 0:
        pick = np.random.default_rng(ps_seed).random(len(out)) < ps_fraction
        out = [
            replace(j, architecture="ps", ps_shards=ps_shards, duration_s=None) if p and j.architecture != "ps" else j
            for j, p in zip(out, pick)
        ]
        notes.append(f"{_g(100 * ps_fraction)}% parameter-server jobs of {ps_shards} shards (seed {ps_seed})")
    if hybrid_fraction > 0:
        out = _as_hybrid(out, hybrid_fraction, hybrid_seed, most_gpus)
        notes.append(f"{_g(100 * hybrid_fraction)}% of multi-GPU jobs hybrid-parallel (seed {hybrid_seed})")
    return Workload(jobs=tuple(out), source="; ".join(notes), dropped=dropped)


def _as_hybrid(jobs: list[TraceJob], fraction: float, seed: int, most_gpus: int) -> list[TraceJob]:
    """A ``fraction`` share of the all-reduce jobs of two or more workers made hybrid-parallel
    with the generator's realistic shapes (:func:`placement.instances.generate.hybrid_shape`:
    tp within a server of ``most_gpus`` GPUs, a pipeline where the groups allow one, the
    activations of its hidden size); ``compute_ms`` becomes one stage's share of one
    microbatch; the job's iterations and gradient size (its model, as the trace gives it) stay,
    so that its run time stays the trace's order of magnitude.  Drawn with
    ``numpy.random.default_rng(seed)``."""
    from placement.instances.generate import hybrid_shape

    rng = np.random.default_rng(seed)
    out = []
    for j in jobs:
        shape = hybrid_shape(rng, j.workers, most_gpus) if rng.random() < fraction else None
        if shape is None or j.architecture != "allreduce":
            out.append(j)
            continue
        per = max(0.001, round(j.compute_ms / (shape["pp"] * shape["microbatches"]), 3))
        shape.pop("gradient_mb")
        out.append(replace(j, compute_ms=per, duration_s=None, **shape))
    return out


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
    hybrid_fraction: float = 0.0,
    hybrid_seed: int = 0,
    most_gpus: int = 8,
    min_workers: int | None = None,
    widen: int = 1,
) -> Workload:
    """Jobs sorted by ``(submit_s, id)``, then, in this order: kept in the window
    ``[window_start_s, window_start_s + window_s)`` and shifted to start at 0; only those of at
    least ``min_workers`` GPUs; the first ``max_jobs``; submit times divided by ``load``;
    inter-arrival times redrawn i.i.d.
    exponential at the same mean rate (jobs / span) with ``numpy.random.default_rng(
    resample_seed)``, first submission and order kept; every gang ``widen`` times wider (weak
    scaling: iterations, per-worker compute, gradient and the trace's run time kept); jobs wider than ``max_workers``
    refused (:class:`TraceError`) or, with ``drop_wider``, dropped and counted; a
    ``ps_fraction`` share of the jobs (drawn with ``numpy.random.default_rng(ps_seed)``) made
    parameter-server jobs of ``ps_shards`` shards; a ``hybrid_fraction`` share of the
    multi-GPU all-reduce jobs (``numpy.random.default_rng(hybrid_seed)``) made hybrid-parallel
    on servers of at most ``most_gpus`` GPUs.

    ``source`` starts :attr:`Workload.source`; the options applied are appended.
    Raises ``ValueError`` on a bad option value."""
    return apply_to(
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
        hybrid_fraction=hybrid_fraction,
        hybrid_seed=hybrid_seed,
        most_gpus=most_gpus,
        min_workers=min_workers,
        widen=widen,
    )

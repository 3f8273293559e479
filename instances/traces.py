"""Real public traces turned into instance ingredients (see ``../shared/data/README.md``).

- **Alibaba cluster-trace-gpu-v2023** (ATC'23; free for research and study, cite the
  trace): the server shapes of its 1,213 GPU servers, :data:`ALIBABA_V2023_SHAPES`
  (counts derived from ``openb_node_list_gpu_node.csv`` by :func:`alibaba_shapes`; the
  trace itself is not redistributed here).
- **Microsoft ElasticFlow** (ASPLOS'23, MIT licence, copied unchanged in
  ``instances/traces/elasticflow/``): job submissions, read by :func:`elasticflow_jobs`.
- **Alibaba PAI cluster-trace-gpu-v2020** (NSDI'22; free for research and study, cite the
  trace): per-worker mini-batch times of four 10-worker jobs, calibrated into slowdown
  distributions by :func:`calibrate_pai`; the fitted figures are :data:`PAI_FIT`.

Calibration method (PAI): at every sampled iteration of a job, each worker's batch time
is divided by the median worker's; a worker whose median ratio is at least
:data:`STRAGGLER_MEDIAN` is a *persistent straggler*.  The ratios of normal workers and of
persistent stragglers are pooled over the four jobs and binned at
:data:`PAI_BIN_EDGES`; each bin becomes one support point (the bin's mean ratio, at
least 1) with the bin's share as probability.  The share of persistent stragglers is the
probability that a generated server is one.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from placement.model import Slowdown
from placement.model.catalog import ALIBABA_GPU_TYPES, ELASTICFLOW_MODELS

__all__ = [
    "ALIBABA_V2023_SHAPES",
    "ALIBABA_GPU_TYPES",
    "alibaba_shapes",
    "elasticflow_jobs",
    "ELASTICFLOW_MODELS",
    "calibrate_pai",
    "PAI_BIN_EDGES",
    "PAI_NORMAL",
    "PAI_STRAGGLER",
    "PAI_STRAGGLER_SHARE",
    "STRAGGLER_MEDIAN",
    "elasticflow_path",
]

# (gpu model, gpus, cpus, memory GB): servers, from openb_node_list_gpu_node.csv
ALIBABA_V2023_SHAPES: tuple[tuple[str, int, float, float, int], ...] = (
    ("G2", 8, 96.0, 384.0, 549),
    ("T4", 2, 104.0, 512.0, 387),
    ("P100", 2, 16.0, 120.0, 107),
    ("G3", 8, 128.0, 768.0, 39),
    ("V100M16", 4, 32.0, 128.0, 28),
    ("P100", 2, 64.0, 256.0, 22),
    ("V100M32", 8, 96.0, 768.0, 21),
    ("V100M16", 1, 8.0, 32.0, 19),
    ("T4", 4, 96.0, 384.0, 17),
    ("V100M32", 4, 48.0, 368.0, 9),
    ("V100M16", 8, 64.0, 256.0, 7),
    ("P100", 1, 8.0, 60.0, 3),
    ("A10", 1, 128.0, 1024.0, 2),
    ("P100", 2, 8.0, 60.0, 2),
    ("V100M16", 8, 82.0, 336.0, 1),
)


def alibaba_shapes(path: str | os.PathLike[str]) -> list[tuple[str, int, float, float, int]]:
    """Server shapes and counts of an ``openb_node_list_gpu_node.csv``, most common first."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    c = Counter((r["model"], int(r["gpu"]), int(r["cpu_milli"]) / 1000.0, int(r["memory_mib"]) / 1024.0) for r in rows)
    return [(m, g, cpu, mem, n) for (m, g, cpu, mem), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


def elasticflow_path() -> Path:
    """The bundled ElasticFlow cluster03 trace (MIT licence)."""
    return Path(str(resources.files("placement.instances").joinpath("traces", "elasticflow", "cluster03.csv")))


def elasticflow_jobs(
    path: str | os.PathLike[str] | None = None,
    *,
    window_start_s: float = 0.0,
    window_s: float = 3600.0,
    max_gpus: int | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Jobs submitted in ``[window_start_s, window_start_s + window_s)``, in submission
    order: ``id`` (the first 8 characters of the trace's), ``workers``, ``compute_ms``
    (duration / iterations, to the microsecond), ``gradient_mb`` (by model), ``iterations``,
    ``model``, ``submission_s``.  Jobs wider than ``max_gpus`` are skipped.  The rows come
    from the one ElasticFlow reader, :func:`placement.simulation.workload.read_elasticflow`
    (bad rows are refused with their row numbers)."""
    from placement.simulation.workload.readers import read_elasticflow

    jobs = sorted(read_elasticflow(path if path is not None else elasticflow_path()), key=lambda j: (j.submit_s, j.id))
    out: list[dict[str, Any]] = []
    for j in jobs:
        if not window_start_s <= j.submit_s < window_start_s + window_s:
            continue
        if max_gpus is not None and j.workers > max_gpus:
            continue
        out.append(
            {
                "id": j.id[:8],
                "workers": j.workers,
                "compute_ms": round(j.compute_ms, 3),
                "gradient_mb": j.gradient_mb,
                "iterations": j.iterations,
                "model": j.model,
                "submission_s": int(j.submit_s) if float(j.submit_s).is_integer() else j.submit_s,
            }
        )
        if limit is not None and len(out) >= limit:
            break
    return out


PAI_BIN_EDGES: tuple[float, ...] = (0.0, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, float("inf"))
STRAGGLER_MEDIAN = 1.1

# calibrate_pai on job_{1..4}_norm.csv (40 workers, 29,706 samples; a test re-derives it)
PAI_NORMAL = Slowdown((1.0, 1.073, 1.129, 1.241, 1.756, 2.176), (0.9178, 0.0508, 0.0288, 0.0023, 0.0002, 0.0001))
PAI_STRAGGLER = Slowdown(
    (1.0, 1.071, 1.15, 1.422, 1.74, 2.206, 4.266, 6.777),
    (0.0013, 0.0004, 0.0022, 0.1396, 0.5376, 0.2565, 0.0169, 0.0455),
)
PAI_STRAGGLER_SHARE = 0.125


def _fit(ratios: np.ndarray) -> Slowdown:
    edges = np.asarray(PAI_BIN_EDGES)
    idx = np.searchsorted(edges, ratios, side="right") - 1
    vals, probs = [], []
    for b in range(len(edges) - 1):
        sel = ratios[idx == b]
        if len(sel):
            vals.append(round(max(1.0, float(sel.mean())), 3))
            probs.append(len(sel) / len(ratios))
    p = np.round(np.asarray(probs), 4)
    p[int(np.argmax(p))] += round(1.0 - float(p.sum()), 4)
    return Slowdown(tuple(vals), tuple(float(round(x, 4)) for x in p))


def calibrate_pai(paths: Sequence[str | os.PathLike[str]]) -> dict[str, Any]:
    """Fit the normal-worker and persistent-straggler distributions from PAI files
    (columns ``worker, gpu, time, batch_time_norm``); see the module docstring."""
    normal, strag = [], []
    workers = stragglers = 0
    for path in paths:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        by_t: dict[int, dict[int, float]] = {}
        for r in rows:
            by_t.setdefault(int(r["time"]), {})[int(r["worker"])] = float(r["batch_time_norm"])
        per_w: dict[int, list[float]] = {}
        for _t, ws in by_t.items():
            if len(ws) < 2:
                continue
            med = float(np.median(list(ws.values())))
            if med <= 0:
                continue
            for w, v in ws.items():
                per_w.setdefault(w, []).append(v / med)
        for rs in per_w.values():
            workers += 1
            if float(np.median(rs)) >= STRAGGLER_MEDIAN:
                stragglers += 1
                strag += rs
            else:
                normal += rs
    return {
        "normal": _fit(np.asarray(normal)),
        "straggler": _fit(np.asarray(strag)) if strag else Slowdown(),
        "straggler_share": round(stragglers / workers, 4) if workers else 0.0,
        "workers": workers,
        "samples": len(normal) + len(strag),
    }

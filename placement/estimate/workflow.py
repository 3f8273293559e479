"""The whole estimation of ``placement estimate``, as one library call: read the logs (renaming
their servers through a map), learn per-server slowdowns, congested links from step logs and op
traces, forecast contention from telemetry, and write it all into the instance."""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.apply import apply_estimates
from placement.estimate.congestion import (
    BIN_S,
    CongestionEstimate,
    congestion_from_steps,
    read_step_log,
    with_congestion,
)
from placement.estimate.gpu_profiles import GpuProfile, apply_gpu_profiles, read_gpu_profiles
from placement.estimate.logs import (
    LogData,
    ServerEstimate,
    estimate_from_logs,
    gpu_factors_from_logs,
    joined_logs,
    read_iteration_log,
    read_pai,
)
from placement.estimate.telemetry import contention_overrides, read_demands, read_telemetry
from placement.model import Instance, Slowdown
from placement.model.records import ANY_CLASS

__all__ = ["Estimated", "read_server_map", "estimate_instance"]


@dataclass(frozen=True)
class Estimated:
    """An instance with the estimates written in, and what was learned."""

    instance: Instance
    servers: dict[str, ServerEstimate] | None
    """Per server, what the logs taught (``None`` without logs)."""
    fleet: Slowdown | None
    """The fleet prior given to servers without observations."""
    overrides: dict[str, dict[str, Slowdown]] | None
    """Per job and server, the contention forecast from telemetry (``None`` without it)."""
    gpu_profiles: tuple[GpuProfile, ...] = ()
    """The per-GPU profiles read (``gpu_profiles``), one per class."""
    laid_out: tuple[str, ...] = ()
    """How each class's factors were laid onto the servers."""
    links: CongestionEstimate | None = None
    """Per domain, the congestion law learnt from step logs or an op trace's transfers (``None``
    without either)."""


def read_server_map(
    path: str | os.PathLike[str], instance: Instance | None, *, key: str = "log_server", option: str = "--map"
) -> dict[str, str]:
    """``name -> server`` from a CSV with the columns ``key, server`` (``log_server`` for
    ``placement estimate --map``, ``host`` for ``placement serve --prometheus-hosts``); servers
    not in ``instance`` (when given), empty cells and names mapped twice are refused by row."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InvalidInputError([f"{option} {path}: cannot read it: {e}"]) from None
    out: dict[str, str] = {}
    problems = []
    if rows and not {key, "server"} <= set(rows[0]):
        raise InvalidInputError([f"{option} {path}: needs the columns {key}, server; the header has {sorted(rows[0])}"])
    what = key.replace("_", " ")
    for line, r in enumerate(rows, start=2):
        a, b = (r.get(key) or "").strip(), (r.get("server") or "").strip()
        if not a or not b:
            problems.append(f"{option} {path} row {line}: empty {key} or server")
        elif instance is not None and b not in instance.server_by_id:
            problems.append(f"{option} {path} row {line}: server {b!r} is not in the instance")
        elif a in out:
            problems.append(f"{option} {path} row {line}: {what} {a!r} is mapped twice")
        else:
            out[a] = b
    if problems:
        raise InvalidInputError(problems)
    return out


def _with_gpu_factors(instance: Instance, gpus: Mapping[tuple[str, int], float]) -> Instance:
    """``instance`` with the per-GPU factors learnt from logs (every class's; GPUs not seen at 1).
    A GPU index past its server's GPUs is refused: the logs and the cluster disagree."""
    if not gpus:
        return instance
    by: dict[str, dict[int, float]] = {}
    for (sid, g), f in gpus.items():
        by.setdefault(sid, {})[g] = f
    problems = [
        f"logs name GPU {g} of server {sid!r}, which has {instance.server_by_id[sid].gpus}"
        for sid, fs in sorted(by.items())
        if sid in instance.server_by_id
        for g in sorted(fs)
        if g >= instance.server_by_id[sid].gpus
    ]
    if problems:
        raise InvalidInputError(problems)
    servers = tuple(
        dataclasses.replace(s, gpu_slowdowns={ANY_CLASS: tuple(by[s.id].get(g, 1.0) for g in range(s.gpus))})
        if s.id in by
        else s
        for s in instance.servers
    )
    return instance.replace(servers=servers)


def _joined(parts: Sequence[LogData], rename: Mapping[str, str] | None) -> LogData:
    log = joined_logs(parts)
    if rename:
        server = np.array([rename.get(str(s), str(s)) for s in log.server])
        log = LogData(log.job, server, log.iteration, log.duration, log.gpu)
    return log


def estimate_instance(
    instance: Instance,
    *,
    logs: Sequence[str | os.PathLike[str]] = (),
    pai: Sequence[str | os.PathLike[str]] = (),
    server_map: str | os.PathLike[str] | None = None,
    telemetry: str | os.PathLike[str] | None = None,
    demands: str | os.PathLike[str] | None = None,
    half_life: float | None = None,
    prior_strength: float | None = None,
    horizon: int = 1,
    op_trace: str | os.PathLike[str] | None = None,
    rank_map: str | os.PathLike[str] | None = None,
    gpu_profiles: Sequence[str | os.PathLike[str]] = (),
    perf_is: str | None = None,
    seed: int = 0,
    steps: Sequence[str | os.PathLike[str]] = (),
    bin_s: float = BIN_S,
) -> Estimated:
    """``instance`` with slowdowns learned from iteration ``logs`` and ``pai`` files (their
    servers renamed through ``server_map``) and contention overrides forecast ``horizon``
    steps ahead from ``telemetry`` and ``demands``; per-GPU factors from ``gpu_profiles``
    (:mod:`placement.estimate.gpu_profiles`: ``perf_is`` their direction, ``seed`` the layout).  Bad input raises
    :class:`~placement.errors.InvalidInputError` naming the file and row.  ``op_trace``: a
    hybrid job's per-operation trace (:mod:`placement.estimate.optrace`), its ranks on the
    servers ``rank_map`` names; each rank compared with the ranks of its own stage, and its
    data-parallel collectives telling the links.  ``steps``: step logs
    (:mod:`placement.estimate.congestion`), binned by ``bin_s`` seconds, for the congestion laws
    of the domains their jobs cross."""
    if not (logs or pai or telemetry or op_trace or gpu_profiles or steps):
        raise InvalidInputError(
            ["give --logs, --pai, --op-trace, --steps, --telemetry and/or --gpu-profiles: nothing to estimate from"]
        )
    if steps and op_trace:
        raise InvalidInputError(["--steps bins by time and --op-trace by step: give one of them"])
    if bool(op_trace) != bool(rank_map):
        raise InvalidInputError(["--op-trace and --rank-map go together"])
    if op_trace and (logs or pai):
        raise InvalidInputError(["--op-trace estimates from one hybrid job's trace: give it without --logs and --pai"])
    if bool(telemetry) != bool(demands):
        raise InvalidInputError(["--telemetry and --demands go together"])
    servers = fleet = overrides = links = None
    inst = instance
    if logs or pai:
        parts = [read_iteration_log(p) for p in logs] + ([read_pai(list(pai))] if pai else [])
        log = _joined(parts, read_server_map(server_map, inst) if server_map else None)
        kw = {k: v for k, v in (("half_life", half_life), ("prior_strength", prior_strength)) if v is not None}
        gpus = gpu_factors_from_logs(log)
        learned, fleet = estimate_from_logs(log, servers=[s.id for s in inst.servers], gpu_factors=gpus, **kw)
        seen = set(log.server)
        servers = {k: v for k, v in learned.items() if k in inst.server_by_id or k in seen}
        inst = _with_gpu_factors(apply_estimates(inst, servers, fleet), gpus)
    if op_trace and rank_map:
        from pathlib import Path

        from placement.estimate.optrace import (
            congestion_from_op_trace,
            estimate_from_op_trace,
            read_op_trace,
            read_rank_map,
        )

        kw = {k: v for k, v in (("half_life", half_life), ("prior_strength", prior_strength)) if v is not None}
        ranks = read_rank_map(rank_map, inst)
        trace = read_op_trace(op_trace)
        servers, fleet = estimate_from_op_trace(trace, ranks, source=str(op_trace), **kw)
        links = congestion_from_op_trace(trace, ranks, inst, job=Path(op_trace).stem)
        inst = with_congestion(apply_estimates(inst, servers, fleet), links.laws)
    if steps:
        links = congestion_from_steps(read_step_log(steps, inst), inst, bin_s=bin_s)
        inst = with_congestion(inst, links.laws)
    if telemetry and demands:
        overrides = contention_overrides(inst, read_telemetry(telemetry), read_demands(demands), horizon=horizon)
        inst = apply_estimates(inst, overrides=overrides)
    profiles: list[GpuProfile] = []
    said: list[str] = []
    if gpu_profiles:
        for path in gpu_profiles:
            profiles += read_gpu_profiles(path, perf_is=perf_is)
        inst, said = apply_gpu_profiles(inst, profiles, seed=seed)
    return Estimated(inst, servers, fleet, overrides, tuple(profiles), tuple(said), links)

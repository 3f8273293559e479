"""Per-operation traces of hybrid-parallel jobs (ByteDance's per-rank format, OSDI'25): which
servers are slow, told apart from the job's own unevenness.

In a hybrid job most slowness is the job's own: pipeline stages of unequal work, and sequence
lengths that vary from step to step and from microbatch to microbatch.  Comparing a rank with the
job's median rank would blame the servers of the heavier stages.  Here a rank is compared only
with its *peers*: the ranks of its own pipeline stage and model chunk, at the same step and on the
same microbatch, across the data-parallel replicas (they run the same layers on batches of the same
shape).  A rank's look at a step is the median over its microbatches of its ratio to its peers'
median, so that a long sequence in one microbatch moves it little, while a slow GPU, slow on every
microbatch, moves it fully.  Looks go through the estimator of ``--logs`` (bins, recency weights
over steps, Beta/Dirichlet priors towards the fleet), one estimate per rank; a server's estimate
is that of its slowest rank (by mean), since a job on that server waits for its slowest GPU.

Columns (Parquet through ``pyarrow``, an optional extra, or the same columns as CSV):
``dp_rank, stage, rank, step, optype, duration`` and optionally ``mc`` (model chunk),
``mb_id`` (microbatch) and ``start_ts``; only the compute operations (:data:`COMPUTE_OPS`) count
for the servers, and only they are checked (every bad one named at once).

**Transfers** (:func:`congestion_from_op_trace`): the data-parallel collectives
(:data:`DP_COLLECTIVES`) show the links.  A collective's transfer time at a step is the
*shortest* among its data-parallel group's ranks (the ranks of one stage and model chunk): the
others also wait for the slowest to arrive, the shortest is the pure transfer.  The job's
communication at a step is the sum of its collectives' (a step missing one of them is left
out), its step the step's wall time (from ``start_ts``, else its busiest rank's summed
operations); these go through the congestion rule of :mod:`placement.estimate.congestion`, one
bin a step, the job crossing the domains of its ranks' servers.  A collective row with a bad
value (a duration that is not a finite number >= 0) is dropped, not refused.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.congestion import CongestionEstimate, JobSeries, learn_congestion
from placement.estimate.csvrows import csv_text, raise_problems
from placement.estimate.logs import HALF_LIFE, PRIOR_STRENGTH, ServerEstimate, estimate_from_ratios
from placement.formats.cells import CellError, cell_number
from placement.model.records import Instance, Slowdown

__all__ = [
    "OP_COLUMNS",
    "COMPUTE_OPS",
    "DP_COLLECTIVES",
    "OpTrace",
    "Transfers",
    "OpTraceError",
    "read_op_trace",
    "read_rank_map",
    "rank_looks",
    "estimate_from_op_trace",
    "congestion_from_op_trace",
]

OP_COLUMNS = ("dp_rank", "stage", "rank", "step", "optype", "duration")
"""The columns every per-operation trace has (``mc`` and ``mb_id`` are optional: 0)."""
COMPUTE_OPS = ("forward-compute", "backward-compute")
"""The operations that show a GPU's speed (sends, receives and collectives wait on others)."""
DP_COLLECTIVES = ("grads-reduce-scatter", "params-all-gather")
"""The data-parallel collectives, whose shortest rank shows the transfer over the links."""
_INTS = ("dp_rank", "stage", "rank", "step", "mc", "mb_id")


class OpTraceError(InvalidInputError):
    kind = "op-trace"


@dataclass(frozen=True)
class Transfers:
    """A trace's data-parallel collectives (rows with a bad value dropped), one entry per row,
    and every step's wall time."""

    stage: np.ndarray
    mc: np.ndarray
    step: np.ndarray
    op: np.ndarray
    """Index in :data:`DP_COLLECTIVES`."""
    duration: np.ndarray
    steps: np.ndarray
    """The trace's steps, sorted."""
    step_time: np.ndarray
    """Each step's wall time."""


@dataclass(frozen=True)
class OpTrace:
    """The compute operations of a trace, one entry per row (and its transfers, when read
    from a file)."""

    dp_rank: np.ndarray
    stage: np.ndarray
    rank: np.ndarray
    step: np.ndarray
    mc: np.ndarray
    mb_id: np.ndarray
    duration: np.ndarray
    transfers: Transfers | None = None


def _whole(cols: Mapping[str, Any], c: str, n: int) -> np.ndarray:
    """Column ``c`` as floats (zeros when absent), NaN where it is not a whole number >= 0
    (``mc``: any whole number)."""
    if c not in cols:
        return np.zeros(n)
    x = np.asarray(cols[c], dtype=float)
    bad = ~np.isfinite(x) | (x != np.trunc(x)) | ((x < 0) if c != "mc" else False)
    return np.where(bad, np.nan, x)


def _transfers(cols: Mapping[str, Any], op: np.ndarray) -> Transfers:
    """The collectives of :data:`DP_COLLECTIVES` with good values, and each step's wall time:
    the span of its operations from ``start_ts`` when the trace has it, else its busiest rank's
    summed operations (an upper bound when a rank's operations overlap)."""
    n = len(op)
    d = np.asarray(cols["duration"], dtype=float)
    step, stage, mc, rank = (_whole(cols, c, n) for c in ("step", "stage", "mc", "rank"))
    good = np.isfinite(d) & (d >= 0) & np.isfinite(step)
    start = np.asarray(cols["start_ts"], dtype=float) if "start_ts" in cols else None
    timed = good & np.isfinite(start) if start is not None else good & np.isfinite(rank)
    steps, inv = np.unique(step[timed], return_inverse=True)
    inv = inv.reshape(-1)
    if start is not None:
        first = np.full(len(steps), np.inf)
        last = np.full(len(steps), -np.inf)
        np.minimum.at(first, inv, start[timed])
        np.maximum.at(last, inv, start[timed] + d[timed])
        wall = last - first
    else:
        busy, b_inv = np.unique(np.stack([inv, rank[timed]], axis=1), axis=0, return_inverse=True)
        per_rank = np.bincount(b_inv.reshape(-1), weights=d[timed], minlength=len(busy))
        wall = np.zeros(len(steps))
        np.maximum.at(wall, busy[:, 0].astype(np.int64), per_rank)
    which = np.full(n, -1)
    for k, name in enumerate(DP_COLLECTIVES):
        which[op == name] = k
    keep = (which >= 0) & good & np.isfinite(stage) & np.isfinite(mc) & np.isin(step, steps)
    stage_k, mc_k, step_k = (x[keep].astype(np.int64) for x in (stage, mc, step))
    return Transfers(stage_k, mc_k, step_k, which[keep], d[keep], steps.astype(np.int64), wall)


def _from_columns(cols: Mapping[str, Any], name: str, source: str, row_of: np.ndarray | None = None) -> OpTrace:
    """Check the columns (every bad row named at once) and keep the compute operations."""
    missing = [c for c in OP_COLUMNS if c not in cols]
    if missing:
        raise OpTraceError([f"{name}: missing column(s) {', '.join(missing)}; it has {sorted(cols)}"], source=source)
    n = len(cols["duration"])
    op = np.asarray(cols["optype"]).astype(str)
    keep = np.isin(op, COMPUTE_OPS)
    rows = row_of if row_of is not None else np.arange(n) + 1  # Parquet: 1-based row numbers
    where = "line" if row_of is not None else "row"
    out: dict[str, np.ndarray] = {}
    problems: list[str] = []
    for c in (*_INTS, "duration"):
        if c not in cols:
            out[c] = np.zeros(int(keep.sum()), dtype=np.int64)
            continue
        x = np.asarray(cols[c], dtype=float)[keep]
        bad = ~np.isfinite(x)
        if c == "duration":
            bad |= x <= 0
        elif c in ("dp_rank", "stage", "rank", "step"):
            bad |= (x < 0) | (x != np.trunc(x))
        else:
            bad |= x != np.trunc(x)
        for r in rows[keep][bad][:10]:
            problems.append(
                f"{name} {where} {int(r)}: {c} must be a "
                + ("number > 0" if c == "duration" else "whole number" + (" >= 0" if c in OP_COLUMNS else ""))
            )
        if bad.any() and bad.sum() > 10:
            problems.append(f"{name}: ... and {int(bad.sum()) - 10} more bad {c} values")
        out[c] = x if c == "duration" else np.where(bad, 0, x).astype(np.int64)
    raise_problems(problems, source, OpTraceError)
    if not keep.any():
        raise OpTraceError([f"{name}: no compute operations ({', '.join(COMPUTE_OPS)})"], source=source)
    return OpTrace(**out, transfers=_transfers(cols, op))


def read_op_trace(path: str | os.PathLike[str]) -> OpTrace:
    """A per-operation trace from Parquet (``.parquet``, needs ``pyarrow``) or CSV."""
    p = Path(path)
    if p.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise OpTraceError(
                [
                    f"{p.name}: reading Parquet needs pyarrow (pip install 'placement[parquet]'), or give the same columns as CSV"
                ],
                source=str(p),
            ) from None
        try:
            table = pq.read_table(p)
        except Exception as e:  # a file pyarrow cannot read: name it, no traceback
            raise OpTraceError([f"{p.name}: not a readable Parquet file ({e})"], source=str(p)) from None
        cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}
        return _from_columns(cols, p.name, str(p))
    f = csv_text(p, OpTraceError)
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in OP_COLUMNS if c not in header]
        if missing:
            raise OpTraceError(
                [f"{p.name}: missing column(s) {', '.join(missing)}; the header has {header}"], source=str(p)
            )
        data: dict[str, list[Any]] = {c: [] for c in header if c in (*_INTS, "duration", "optype", "start_ts")}
        lines: list[int] = []
        problems: list[str] = []
        for line, row in enumerate(reader, start=2):
            lines.append(line)
            compute = (row.get("optype") or "").strip() in COMPUTE_OPS
            for c in data:
                v = (row.get(c) or "").strip()
                if c == "optype":
                    data[c].append(v)
                    continue
                try:
                    data[c].append(cell_number(v))
                except CellError as e:
                    if c == "start_ts" or (c == "duration" and not compute):  # not checked: NaN
                        data[c].append(float("nan"))
                        continue
                    problems.append(f"{p.name} line {line}: {c} {e}")
                    data[c].append(float("nan"))
    raise_problems(problems, str(p), OpTraceError)
    return _from_columns(data, p.name, str(p), np.array(lines))


def read_rank_map(path: str | os.PathLike[str], instance: Instance | None = None) -> dict[int, str]:
    """``rank -> server`` from a CSV ``rank,server``; a rank that is not a whole number, an empty
    server, a server not in ``instance`` and a rank listed twice are refused by line."""
    p = Path(path)
    f = csv_text(p, OpTraceError)
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        if not {"rank", "server"} <= set(header):
            raise OpTraceError([f"{p.name}: needs the columns rank, server; the header has {header}"], source=str(p))
        out: dict[int, str] = {}
        problems = []
        for line, row in enumerate(reader, start=2):
            server = (row.get("server") or "").strip()
            try:
                rank = int(cell_number(row.get("rank"), integer=True, minimum=0))
            except CellError as e:
                problems.append(f"{p.name} line {line}: rank {e}")
                continue
            if not server:
                problems.append(f"{p.name} line {line}: empty server")
            elif instance is not None and server not in instance.server_by_id:
                problems.append(f"{p.name} line {line}: server {server!r} is not in the instance")
            elif rank in out:
                problems.append(f"{p.name} line {line}: rank {rank} is listed twice")
            else:
                out[rank] = server
    raise_problems(problems, str(p), OpTraceError)
    if not out:
        raise OpTraceError([f"{p.name}: no rows"], source=str(p))
    return out


def _groups(*keys: np.ndarray) -> tuple[np.ndarray, int]:
    """One group number per row for the distinct tuples of ``keys``."""
    _, inv = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return inv, int(inv.max()) + 1 if len(inv) else 0


def _median_by(values: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    """The median of ``values`` in each of ``n`` groups."""
    order = np.lexsort((values, group))
    v, g = values[order], group[order]
    counts = np.bincount(g, minlength=n)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lo = v[starts + (counts - 1) // 2]
    hi = v[starts + counts // 2]
    return (lo + hi) / 2.0


def rank_looks(trace: OpTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rank, step, ratio)``: each rank's look at each step, the median over its microbatches
    of its compute time (forward and backward) over the median of its peers (same stage, model
    chunk, step and microbatch, across data-parallel replicas; groups of at least two)."""
    # one compute time per (rank, stage, chunk, step, microbatch)
    cell, n_cells = _groups(trace.rank, trace.stage, trace.mc, trace.step, trace.mb_id)
    t = np.bincount(cell, weights=trace.duration, minlength=n_cells)
    first = np.full(n_cells, len(cell))
    np.minimum.at(first, cell, np.arange(len(cell)))
    rank, stage, mc, step, mb = (x[first] for x in (trace.rank, trace.stage, trace.mc, trace.step, trace.mb_id))
    peers, n_peers = _groups(stage, mc, step, mb)
    size = np.bincount(peers, minlength=n_peers)
    ratio = t / _median_by(t, peers, n_peers)[peers]
    ok = size[peers] >= 2
    rank, step, ratio = rank[ok], step[ok], ratio[ok]
    look, n_looks = _groups(rank, step)
    first = np.full(n_looks, len(look))
    np.minimum.at(first, look, np.arange(len(look)))
    return rank[first], step[first], _median_by(ratio, look, n_looks)


def _check_ranks(trace: OpTrace, rank_map: Mapping[int, str], source: str) -> None:
    """Refuse the ranks of ``trace`` that ``rank_map`` does not place, all named at once."""
    missing = sorted(set(np.unique(trace.rank).tolist()) - set(rank_map))
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (f" ... ({len(missing)} in all)" if len(missing) > 20 else "")
        raise OpTraceError([f"ranks of the trace with no server in the rank map: {shown}"], source=source)


def estimate_from_op_trace(
    trace: OpTrace,
    rank_map: Mapping[int, str],
    *,
    half_life: float = HALF_LIFE,
    prior_strength: float = PRIOR_STRENGTH,
    source: str = "op-trace",
) -> tuple[dict[str, ServerEstimate], Slowdown]:
    """Per-server estimates (each its slowest rank's) and the fleet prior, from ``trace`` with
    each rank on the server ``rank_map`` names; ranks of the trace missing from the map are
    refused, all named at once."""
    _check_ranks(trace, rank_map, source)
    rank, step, ratio = rank_looks(trace)
    if not len(rank):
        raise OpTraceError(
            ["no rank has a peer (a rank of its stage in another data-parallel replica) to compare with"], source=source
        )
    per_rank, fleet = estimate_from_ratios(
        np.zeros(len(rank), dtype=np.int64), rank, step, ratio, half_life=half_life, prior_strength=prior_strength
    )
    out: dict[str, ServerEstimate] = {}
    for r, e in per_rank.items():
        sid = rank_map[int(r)]
        if sid not in out or e.mean > out[sid].mean:
            out[sid] = ServerEstimate(sid, e.samples, e.effective, e.straggle_probability, e.slowdown)
    return out, fleet


def congestion_from_op_trace(
    trace: OpTrace, rank_map: Mapping[int, str], instance: Instance, *, job: str = "op-trace"
) -> CongestionEstimate:
    """The laws of the domains the trace's job crosses (its ranks on the servers ``rank_map``
    names: ranks missing from it are refused), from its data-parallel collectives (the module's
    docstring), the job named ``job``."""
    _check_ranks(trace, rank_map, job)
    t = trace.transfers
    if t is None or not len(t.duration):
        why = f"no data-parallel collectives ({', '.join(DP_COLLECTIVES)}) to tell transfers by"
        return learn_congestion(instance, (), {job: why})
    group, n_groups = _groups(t.step, t.stage, t.mc, t.op)
    shortest = np.full(n_groups, np.inf)
    np.minimum.at(shortest, group, t.duration)
    first = np.full(n_groups, len(group))
    np.minimum.at(first, group, np.arange(len(group)))
    g_step = t.step[first]
    kinds = np.unique(np.stack([t.stage[first], t.mc[first], t.op[first]], axis=1), axis=0)
    steps, s_inv = np.unique(g_step, return_inverse=True)
    s_inv = s_inv.reshape(-1)
    complete = np.bincount(s_inv, minlength=len(steps)) == len(kinds)  # every collective there
    comm = np.bincount(s_inv, weights=shortest, minlength=len(steps))[complete]
    steps = steps[complete]
    wall = t.step_time[np.searchsorted(t.steps, steps)]
    servers = tuple(dict.fromkeys(rank_map[int(r)] for r in np.unique(trace.rank)))
    series = JobSeries(job, servers, np.searchsorted(t.steps, steps).astype(np.int64), comm, wall)
    return learn_congestion(instance, [series])

"""Per-GPU factors from profiles (DESIGN.md, "Per-GPU factors"): a GPU's factor for an
application class is its median measurement over the class's fleet median, oriented so that a
slower GPU has the larger factor.

Two formats are read, told apart by their header:

- **PAL's aggregated profiles** (``hal-uw/blox-pal``: ``sgemm-``, ``resnet-``, ``bert-``,
  ``pagerank-longhorn-agg.csv``): one run per row, the GPU in ``uuid``, its node in ``cabinet`` and
  ``node`` (``-1``: unknown), its index in ``device`` or ``dev_id``, the class in ``exp`` (Frontera's PageRank: ``model``), the
  measurement in ``perf``.  ``perf`` is a time for some classes and a speed for others: unless told
  (``perf_is``), its direction is read from the clock: ``perf`` falling as ``freq`` rises is a time.
- **A plain CSV** ``server, gpu, class, perf``: ``perf`` a time (larger is slower) unless told.

Laying the factors onto a cluster: when every profiled node is a server of the cluster (and its
GPU indices fit), each GPU goes where it is.  Otherwise by a seeded rule: the profiled GPUs in
groups by node (a GPU without a node alone), the groups in a random order (``numpy`` generator
seeded with ``seed`` and the class's position), dealt server by server in the cluster's order, each
server taking as many as it has GPUs; when the groups run out a fresh order follows.  Each class is
laid out on its own (the files name GPUs differently, so a GPU's factors for two classes are not
matched: PAL's own simulator draws them independently too).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.csvrows import csv_text, raise_problems
from placement.model import Instance
from placement.model.records import ANY_CLASS

__all__ = ["GpuProfile", "read_gpu_profiles", "lay_out_profiles", "apply_gpu_profiles", "PERF_DIRECTIONS", "DRAWS"]

PERF_DIRECTIONS = ("time", "speed")

_PLAIN = ("server", "gpu", "class", "perf")
_EVIDENCE = (("mean_iter_dur", 1), ("freq", -1))
"""Columns that tell a time from a speed: (column, +1 when it rises with a time, -1 when it falls)."""
_PAL = ("uuid", "perf")


@dataclass(frozen=True)
class GpuProfile:
    """One application class's profiled GPUs."""

    app_class: str
    source: str
    factors: Mapping[str, float]
    """Per profiled GPU (its key), its factor: median over the class's fleet median of the GPUs'
    medians, in the time direction."""
    node: Mapping[str, str | None]
    """Per GPU, its node (``None``: unknown)."""
    index: Mapping[str, int | None]
    """Per GPU, its index on its node (``None``: unknown)."""
    perf_is: str
    """``time`` or ``speed``: how ``perf`` was read."""
    why: str
    """How the direction was decided (given, or the correlation with the clock)."""
    runs: int
    own_spread: float = 1.0
    """The median over GPUs of (a GPU's slowest run over its median): how steady a GPU is."""
    run_factors: tuple[float, ...] = ()
    """Every run's measurement over the median of all runs, in the time direction (what PAL's
    simulator draws from: :func:`lay_out_profiles` with ``draw="runs"``)."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _num(text: str | None) -> float | None:
    try:
        v = float(text) if text is not None and text.strip() != "" else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) else None


def read_gpu_profiles(path: str | os.PathLike[str], *, perf_is: str | None = None) -> list[GpuProfile]:
    """The classes profiled in one file (PAL's aggregated CSV or the plain format); bad rows are
    refused by row number, all at once."""
    if perf_is is not None and perf_is not in PERF_DIRECTIONS:
        raise InvalidInputError([f"perf_is must be one of {PERF_DIRECTIONS}, got {perf_is!r}"])
    src = str(path)
    name = os.path.basename(src)
    reader = csv.DictReader(csv_text(path, InvalidInputError))
    head = [h.strip() for h in (reader.fieldnames or [])]
    plain = all(c in head for c in _PLAIN) and "uuid" not in head
    pal = all(c in head for c in _PAL)
    if not (plain or pal):
        raise InvalidInputError(
            [
                f"{name}: a GPU profile needs the columns {', '.join(_PLAIN)} (plain) or PAL's uuid, perf "
                f"(and exp, cabinet, node, device); the header has {head}"
            ],
            source=src,
        )
    problems: list[str] = []
    per: dict[str, dict[str, list[float]]] = {}
    evidence: dict[str, dict[tuple[str, int], list[tuple[float, float]]]] = {}
    node: dict[str, dict[str, str | None]] = {}
    index: dict[str, dict[str, int | None]] = {}
    for line, r in enumerate(reader, start=2):
        r = {(k or "").strip(): v for k, v in r.items()}
        perf = _num(r.get("perf"))
        if perf is None or perf <= 0:
            problems.append(f"{name} row {line}: perf must be a finite number > 0, got {r.get('perf')!r}")
            continue
        if plain:
            cls = (r.get("class") or "").strip()
            srv = (r.get("server") or "").strip()
            g = _num(r.get("gpu"))
            if not cls or not srv or g is None or g < 0 or g != int(g):
                problems.append(f"{name} row {line}: needs a class, a server and a GPU index >= 0")
                continue
            key, nd = f"{srv}/{int(g)}", srv
            gi: int | None = int(g)
        else:
            cls = (r.get("exp") or r.get("model") or "").strip() or os.path.splitext(name)[0].split("-")[0]
            key = (r.get("uuid") or "").strip()
            if not key:
                problems.append(f"{name} row {line}: empty uuid")
                continue
            cab, nd_raw = (r.get("cabinet") or "").strip(), (r.get("node") or "").strip()
            nd = None if cab in ("", "-1") or nd_raw in ("", "-1") else f"{cab}-{int(float(nd_raw))}"
            dev = _num(r.get("device") if r.get("device") not in (None, "") else r.get("dev_id"))
            gi = int(dev) if dev is not None and nd is not None else None
        per.setdefault(cls, {}).setdefault(key, []).append(perf)
        node.setdefault(cls, {})[key] = nd
        index.setdefault(cls, {})[key] = gi
        for col, sign in _EVIDENCE:
            v = _num(r.get(col))
            if v is not None:
                evidence.setdefault(cls, {}).setdefault((col, sign), []).append((perf, v))
    raise_problems(problems, src, InvalidInputError)
    if not per:
        raise InvalidInputError([f"{name}: no profiled GPU"], source=src)
    out = []
    for cls, runs in per.items():
        direction, why = _direction(perf_is, evidence.get(cls, {}), plain)
        med = {k: float(np.median(v)) for k, v in runs.items()}
        times = med if direction == "time" else {k: 1.0 / v for k, v in med.items()}
        fleet = float(np.median(list(times.values())))
        spread = [
            max(v) / float(np.median(v)) if direction == "time" else float(np.median(v)) / min(v) for v in runs.values()
        ]
        out.append(
            GpuProfile(
                app_class=cls,
                source=src,
                factors={k: t / fleet for k, t in times.items()},
                node=node[cls],
                index=index[cls],
                perf_is=direction,
                why=why,
                runs=sum(len(v) for v in runs.values()),
                own_spread=float(np.median(spread)),
                run_factors=_run_factors(runs, direction),
            )
        )
    return out


def _run_factors(runs: Mapping[str, Sequence[float]], direction: str) -> tuple[float, ...]:
    """Every run's value over the median of all runs, in the time direction."""
    every = np.array([v for vs in runs.values() for v in vs], dtype=float)
    times = every if direction == "time" else 1.0 / every
    return tuple(float(x) for x in times / float(np.median(times)))


def _direction(
    given: str | None, evidence: Mapping[tuple[str, int], Sequence[tuple[float, float]]], plain: bool
) -> tuple[str, str]:
    """Whether ``perf`` is a time or a speed, and why: the column of :data:`_EVIDENCE` that
    correlates most with it (at least 0.3 in size) decides; else a time (as PAL's simulator reads
    every class's ``perf`` over its median)."""
    if given is not None:
        return given, "given"
    if plain:
        return "time", "the plain format's perf is a time"
    best: tuple[float, str, int] | None = None
    for (col, sign), pairs in evidence.items():
        if len(pairs) < 3:
            continue
        p, v = np.asarray(pairs, dtype=float).T
        if p.std() > 0 and v.std() > 0:
            c = float(np.corrcoef(p, v)[0, 1])
            if best is None or abs(c) > abs(best[0]):
                best = (c, col, sign)
    if best is not None and abs(best[0]) >= 0.3:
        c, col, sign = best
        return ("time" if c * sign > 0 else "speed"), f"corr(perf, {col}) = {c:+.2f}"
    return "time", "no column tells: taken as a time" + (f" (corr(perf, {best[1]}) = {best[0]:+.2f})" if best else "")


DRAWS = ("medians", "runs")
"""How factors are laid out: ``medians`` (each profiled GPU's steady factor, the module's rule) or
``runs`` (as PAL's simulator does: every GPU of the cluster, in order, a seeded draw from the
class's runs over their median, so a slow outlier run becomes a GPU's factor)."""


def lay_out_profiles(
    instance: Instance, profiles: Sequence[GpuProfile], *, seed: int = 0, draw: str = "medians"
) -> tuple[dict[str, dict[str, tuple[float, ...]]], list[str]]:
    """Per server, per class, each GPU's factor (the module's rule, or with ``draw="runs"``
    PAL's simulator's), and one line per class saying how it was laid out."""
    if draw not in DRAWS:
        raise InvalidInputError([f"draw must be one of {', '.join(DRAWS)}, got {draw!r}"])
    out: dict[str, dict[str, tuple[float, ...]]] = {}
    said: list[str] = []
    problems: list[str] = []
    for k, prof in enumerate(profiles):
        nodes = set(prof.node.values())
        direct = bool(nodes) and None not in nodes and nodes <= set(instance.server_by_id)
        rows: dict[str, list[float]] = {s.id: [1.0] * s.gpus for s in instance.servers}
        if draw == "runs":
            rng = np.random.default_rng([seed, k])
            pool = np.asarray(prof.run_factors, dtype=float)
            for s in instance.servers:
                rows[s.id] = [float(x) for x in rng.choice(pool, size=s.gpus)]
            said.append(f"{prof.app_class}: each GPU a draw from {len(pool)} runs over their median (seed {seed})")
        elif direct:
            for key, f in prof.factors.items():
                sid, gi = prof.node[key], prof.index[key]
                assert sid is not None
                if gi is None or gi >= instance.server_by_id[sid].gpus:
                    problems.append(
                        f"{prof.source}: GPU {gi} of {sid!r} is beyond its {instance.server_by_id[sid].gpus} GPUs"
                    )
                    continue
                rows[sid][gi] = f
            said.append(f"{prof.app_class}: {len(prof.factors)} GPUs on the servers the profile names")
        else:
            groups: dict[str, list[str]] = {}
            for key in sorted(prof.factors):
                nd = prof.node[key]
                groups.setdefault(nd if nd is not None else f"\0{key}", []).append(key)
            ordered = [
                sorted(g, key=lambda x: (prof.index[x] if prof.index[x] is not None else -1, x))
                for _, g in sorted(groups.items())
            ]
            rng = np.random.default_rng([seed, k])
            stream: list[float] = []
            rounds = 0
            for s in instance.servers:
                while len(stream) < s.gpus:
                    rounds += 1
                    for gi in rng.permutation(len(ordered)):
                        stream += [prof.factors[key] for key in ordered[int(gi)]]
                rows[s.id], stream = stream[: s.gpus], stream[s.gpus :]
            total = sum(s.gpus for s in instance.servers)
            said.append(
                f"{prof.app_class}: {len(prof.factors)} profiled GPUs in {len(ordered)} groups laid on {total} GPUs "
                f"(seed {seed}{'; the profile reused ' + str(rounds - 1) + ' time(s)' if rounds > 1 else ''})"
            )
        for sid, fs in rows.items():
            out.setdefault(sid, {})[prof.app_class] = tuple(fs)
    raise_problems(problems, "--gpu-profiles", InvalidInputError)
    return out, said


def apply_gpu_profiles(
    instance: Instance, profiles: Sequence[GpuProfile], *, seed: int = 0, draw: str = "medians"
) -> tuple[Instance, list[str]]:
    """``instance`` with the profiles' factors on its servers: by class, or, with one class
    profiled, for every class (:data:`~placement.model.records.ANY_CLASS`)."""
    classes = [p.app_class for p in profiles]
    dup = sorted({c for c in classes if classes.count(c) > 1})
    if dup:
        raise InvalidInputError([f"--gpu-profiles: class {c!r} is profiled twice" for c in dup])
    laid, said = lay_out_profiles(instance, profiles, seed=seed, draw=draw)
    import dataclasses

    servers = []
    for s in instance.servers:
        fs = laid.get(s.id, {})
        if len(profiles) == 1:
            fs = {ANY_CLASS: next(iter(fs.values()))} if fs else {}
        servers.append(dataclasses.replace(s, gpu_slowdowns=fs))
    return instance.replace(servers=tuple(servers)), said

"""Congested links from what jobs' paces show (DESIGN.md, "Congested domains"): the one home of
the rule from a job's look at congestion to a domain's look to the domains' laws, used offline
by ``placement estimate --steps`` and ``--op-trace`` and online by the simulator's ``estimated``
knowledge (:mod:`placement.simulation.congestion_book`).

**A job's look** in a time bin is its communication there (the median over its steps in the bin)
over its communication at no congestion, read as 1 unless it is more than :data:`NOISE_SIGMAS`
noise deviations above 1 (:func:`job_look`).  Only jobs on two or more servers cross links, and
only those whose communication is at least :data:`MIN_COMM_SHARE` of their step say enough.

**A domain's look** (:func:`domain_looks`) is the *least* look among the jobs crossing it: a job
pays the largest ``L`` of the domains it crosses, so a slowdown shared by every job crossing a
domain is put on it, one only some of them show is not.  Then it is **explained away**: a domain
reads 1 when every job crossing it also crosses a *narrower* domain (one of a higher bandwidth:
every domain nested in another has a higher bandwidth) whose look is at least its own over
:data:`EXPLAIN_TOLERANCE`.  A job across racks waiting on a hot rack says nothing about the
spine.  The least looks are all taken first, and a domain is explained away by the least looks
of the narrower domains (never by what explaining away left of them), so the rule does not
depend on the order the domains are visited in.

**Laws**: each domain's looks, one a bin, go through the estimator of ``--logs``
(:func:`~placement.estimate.logs.estimate_from_ratios`: bins, recency weights, a prior towards
the fleet of domains) with a half-life of :data:`HALF_LIFE_TICKS` bins, and the law is put on
the domain's first switch, the domain's other switches cleared (:func:`with_congestion`).

**Step logs** (:func:`read_step_log`, CSV ``job, servers, time, duration, compute``: the servers
a job ran a step on, ``;``- or space-separated; when the step ended, in seconds; its wall time;
its slowest worker's compute, in the unit of ``duration``): a step's communication is
``duration - compute``, a job's no-congestion communication the median over its steps, and its
noise the scaled MAD (``1.4826 MAD``) relative to that median.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placement.estimate.csvrows import csv_text, raise_problems
from placement.estimate.logs import LogError, estimate_from_ratios
from placement.formats.cells import CellError, cell_number
from placement.model.records import NO_SLOWDOWN, Instance, Slowdown
from placement.problem.congestion import crossed_domains, first_switches
from placement.problem.topology import Cluster, cluster_of

__all__ = [
    "MIN_COMM_SHARE",
    "NOISE_SIGMAS",
    "HALF_LIFE_TICKS",
    "EXPLAIN_TOLERANCE",
    "MAD_SCALE",
    "MIN_STEPS",
    "BIN_S",
    "STEP_COLUMNS",
    "StepLogError",
    "StepLog",
    "JobSeries",
    "DomainEstimate",
    "unseen_law",
    "CongestionEstimate",
    "job_look",
    "domain_looks",
    "domain_laws",
    "learn_congestion",
    "read_step_log",
    "congestion_from_steps",
    "with_congestion",
]

MIN_COMM_SHARE = 0.1
"""A job whose communication is less of its step says too little about its links."""
NOISE_SIGMAS = 4.0
"""A look reads congestion only this many noise deviations above none."""
HALF_LIFE_TICKS = 12.0
"""Recency half-life of a domain's looks, in bins (estimate ticks online: 2 h at 600 s)."""
EXPLAIN_TOLERANCE = 1.1
"""A narrower domain explains a wider one away when its look is at least the wider's over this."""
MAD_SCALE = 1.4826
"""The MAD times this is the standard deviation of a normal sample."""
MIN_STEPS = 3
"""A job with fewer steps has no baseline to read its communication against."""
BIN_S = 600.0
"""Default bin of step logs, in seconds (the simulator's estimate tick)."""
STEP_COLUMNS = ("job", "servers", "time", "duration", "compute")


class StepLogError(LogError):
    kind = "step log"


def job_look(ratio: float, noise: float) -> float:
    """A job's look at the congestion of the links it crosses: ``ratio`` (its communication over
    its communication at no congestion) if it is more than :data:`NOISE_SIGMAS` times ``noise``
    (the ratio's standard deviation at no congestion) above 1, else 1.

    >>> job_look(1.5, 0.1), job_look(1.3, 0.1)
    (1.5, 1.0)
    """
    return ratio if ratio > 1.0 + NOISE_SIGMAS * noise else 1.0


def domain_looks(jobs: Iterable[tuple[float, Sequence[int]]], cluster: Cluster) -> dict[int, float]:
    """Each crossed domain's look from the jobs' ``(look, domains crossed)`` of one bin: the least
    look among the jobs crossing it, explained away (read as 1) when every job crossing it also
    crosses a narrower domain (of a higher bandwidth) whose least look is at least its own over
    :data:`EXPLAIN_TOLERANCE` (the module's docstring).  Domains come in the order the jobs
    first cross them."""
    seen = [(float(look), tuple(ds)) for look, ds in jobs]
    least: dict[int, float] = {}
    for look, ds in seen:
        for d in ds:
            least[d] = min(least.get(d, np.inf), look)
    bw = cluster.domain_bandwidth
    out: dict[int, float] = {}
    for d, v in least.items():
        explained = v > 1.0 and all(
            any(bw[e] > bw[d] and least[e] * EXPLAIN_TOLERANCE >= v for e in ds) for _, ds in seen if d in ds
        )
        out[d] = 1.0 if explained else v
    return out


def domain_laws(
    rows: Sequence[tuple[float, int, float]],
    *,
    domains: Iterable[int] = (),
    from_now: bool = False,
    half_life: float = HALF_LIFE_TICKS,
) -> dict[int, Slowdown]:
    """Each domain's law from its looks ``(bin, domain, look)``: the ``--logs`` estimator with a
    half-life of ``half_life`` bins (:data:`HALF_LIFE_TICKS`; ``math.inf``: every look alike), each
    domain's recency counted from its last look.

    ``from_now``: recency counted from the last bin of all (now, for a learner that looks at every
    tick), so a domain no job has crossed for a while falls back towards the fleet's law instead
    of keeping what it showed last.  ``domains``: the domains to give a law even when no job
    looked at them, :func:`unseen_law` (a domain never seen is not known calm: believed so, it
    would look better than one crossed and seen calm, whose law the prior pulls towards the fleet's)."""
    domains = list(domains)
    if not rows:
        return {}
    a = np.asarray(rows, dtype=float)
    dom = a[:, 1].astype(np.int64)
    age_from = np.zeros_like(dom) if from_now else dom
    est, fleet = estimate_from_ratios(age_from, dom, a[:, 0], a[:, 2], half_life=half_life)
    out = {int(d): e.slowdown for d, e in est.items()}
    unseen = unseen_law(fleet, len(out))
    return {**out, **{int(d): unseen for d in domains if int(d) not in out}}


def unseen_law(fleet: Slowdown, looked: int) -> Slowdown:
    """The law of a domain no job has looked at: the fleet's, its congested share believed as far
    as the domains it was learnt on are many, ``looked / (looked + 1)`` of it (one calm domain
    more in the fleet: one hot domain seen does not make every unseen one hot)."""
    v = np.asarray(fleet.values, dtype=float)
    p = np.asarray(fleet.probs, dtype=float) * np.where(v > 1.0, looked / (looked + 1.0), 1.0)
    v, p = np.concatenate(([1.0], v[v > 1.0])), np.concatenate(([1.0 - p[v > 1.0].sum()], p[v > 1.0]))
    p = np.round(p, 6)
    p[int(np.argmax(p))] += 1.0 - p.sum()
    return Slowdown(tuple(float(x) for x in v), tuple(float(x) for x in p))


@dataclass(frozen=True)
class JobSeries:
    """One job's steps on a fixed set of servers."""

    job: str
    servers: tuple[str, ...]
    bin: np.ndarray
    """Each step's time bin (whole numbers; recency counts in bins)."""
    comm: np.ndarray
    """Each step's communication."""
    step: np.ndarray
    """Each step's wall time (same unit)."""


@dataclass(frozen=True)
class DomainEstimate:
    """What the jobs' looks taught of one domain, named by its first switch."""

    switch: str
    jobs: int
    """How many jobs looked at it."""
    law: Slowdown

    @property
    def mean(self) -> float:
        return self.law.mean()

    @property
    def congested_probability(self) -> float:
        """``P(L > 1)``."""
        return float(sum(p for v, p in zip(self.law.values, self.law.probs) if v > 1.0))


@dataclass(frozen=True)
class CongestionEstimate:
    """Per domain (by its first switch) what was learnt, and the jobs that could not tell."""

    domains: dict[str, DomainEstimate]
    silent: dict[str, str]
    """Job -> why it says nothing about its links."""

    @property
    def laws(self) -> dict[str, Slowdown]:
        """Switch id -> the law of its domain."""
        return {w: e.law for w, e in self.domains.items()}


def _job_looks(s: JobSeries) -> dict[int, float] | str:
    """``bin -> look`` of one job, or why it cannot tell."""
    if len(set(s.servers)) < 2:
        return "one server: no links"
    if len(s.comm) < MIN_STEPS:
        return f"too few steps to tell ({len(s.comm)}; at least {MIN_STEPS})"
    base, step = float(np.median(s.comm)), float(np.median(s.step))
    share = base / step if step > 0 else 0.0
    if not base > 0 or share < MIN_COMM_SHARE:
        return f"too little to tell: communication {share:.1%} of the step (under {MIN_COMM_SHARE:.0%})"
    noise = MAD_SCALE * float(np.median(np.abs(s.comm - base))) / base
    order = np.argsort(s.bin, kind="stable")
    bins, starts = np.unique(s.bin[order], return_index=True)
    parts = np.split(s.comm[order], starts[1:])
    return {int(b): job_look(float(np.median(c)) / base, noise) for b, c in zip(bins.tolist(), parts)}


def learn_congestion(
    instance: Instance, series: Iterable[JobSeries], silent: Mapping[str, str] | None = None
) -> CongestionEstimate:
    """The law of every domain (with a switch) the ``series``' jobs cross, bin by bin through
    :func:`domain_looks` and :func:`domain_laws`; ``silent`` names jobs already known to say
    nothing (and why), to which those that cannot tell are added."""
    cl = cluster_of(instance)
    first = first_switches(instance, cl)
    why = dict(silent or {})
    by_bin: dict[int, list[tuple[float, tuple[int, ...]]]] = {}
    looking: dict[int, set[str]] = {}
    for s in series:
        looks = _job_looks(s)
        if isinstance(looks, str):
            why[s.job] = looks
            continue
        crossed = tuple(d for d in crossed_domains(cl, list(s.servers)) if d in first)
        if not crossed:
            why[s.job] = "its servers cross no domain with a switch"
            continue
        for d in crossed:
            looking.setdefault(d, set()).add(s.job)
        for b, look in looks.items():
            by_bin.setdefault(b, []).append((look, crossed))
    rows = [(float(b), d, v) for b in sorted(by_bin) for d, v in domain_looks(by_bin[b], cl).items()]
    laws = domain_laws(rows)
    order = {w.id: k for k, w in enumerate(instance.switches)}
    domains = {
        first[d]: DomainEstimate(first[d], len(looking[d]), laws[d])
        for d in sorted(laws, key=lambda d: order[first[d]])
    }
    return CongestionEstimate(domains, why)


@dataclass(frozen=True)
class StepLog:
    """The rows of step logs: per step, its job, servers (a set), end time, wall time, compute."""

    job: tuple[str, ...]
    servers: tuple[frozenset[str], ...]
    time: np.ndarray
    duration: np.ndarray
    compute: np.ndarray


_SPLIT = re.compile(r"[;\s]+")


def read_step_log(paths: Sequence[str | os.PathLike[str]], instance: Instance | None = None) -> StepLog:
    """Read step-log CSVs (:data:`STEP_COLUMNS`); every bad row of every file is reported at
    once with its row number: a missing column, an empty job or server list, a server the
    ``instance`` lacks, a time or compute that is not a finite number >= 0, a duration that is not
    one > 0, a compute longer than the step."""
    jobs: list[str] = []
    servers: list[frozenset[str]] = []
    nums: list[tuple[float, float, float]] = []
    problems: list[str] = []
    for path in paths:
        p = Path(path)
        with csv_text(p, StepLogError) as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in STEP_COLUMNS if c not in header]
            if missing:
                problems.append(f"{p.name}: missing column(s) {', '.join(missing)}; the header has {header}")
                continue
            line = 1
            for line, row in enumerate(reader, start=2):
                bad = []
                job = (row.get("job") or "").strip()
                if not job:
                    bad.append("empty job")
                ids = frozenset(x for x in _SPLIT.split((row.get("servers") or "").strip()) if x)
                if not ids:
                    bad.append("empty servers")
                elif instance is not None:
                    unknown = sorted(x for x in ids if x not in instance.server_by_id)
                    if unknown:
                        bad.append(f"server(s) {', '.join(map(repr, unknown))} not in the instance")
                got = []
                for c in ("time", "duration", "compute"):
                    try:
                        got.append(cell_number(row.get(c), minimum=0, exclusive_minimum=c == "duration"))
                    except CellError as e:
                        bad.append(f"{c} {e}")
                if len(got) == 3 and got[2] > got[1]:
                    bad.append(f"compute {got[2]:g} is longer than the step's duration {got[1]:g}")
                if bad:
                    problems.append(f"{p.name} row {line}: " + "; ".join(bad))
                    continue
                jobs.append(job)
                servers.append(ids)
                nums.append((got[0], got[1], got[2]))
            if line == 1:
                problems.append(f"{p.name}: no rows")
    raise_problems(problems, ", ".join(str(p) for p in paths), StepLogError)
    a = np.asarray(nums, dtype=float).reshape(-1, 3)
    return StepLog(tuple(jobs), tuple(servers), a[:, 0], a[:, 1], a[:, 2])


def congestion_from_steps(log: StepLog, instance: Instance, *, bin_s: float = BIN_S) -> CongestionEstimate:
    """The domains' laws from step logs binned by ``bin_s`` seconds of their end times; a job
    whose servers change between steps cannot tell (which links did it cross?)."""
    if not bin_s > 0:
        raise ValueError("bin_s must be > 0")
    rows: dict[str, list[int]] = {}
    for i, j in enumerate(log.job):
        rows.setdefault(j, []).append(i)
    silent: dict[str, str] = {}
    series = []
    for j, idx in rows.items():
        sets = {log.servers[i] for i in idx}
        if len(sets) > 1:
            silent[j] = f"servers change between steps ({len(sets)} sets)"
            continue
        k = np.asarray(idx)
        series.append(
            JobSeries(
                j,
                tuple(sorted(next(iter(sets)))),
                np.floor(log.time[k] / bin_s).astype(np.int64),
                log.duration[k] - log.compute[k],
                log.duration[k],
            )
        )
    return learn_congestion(instance, series, silent)


def with_congestion(instance: Instance, laws: Mapping[str, Slowdown]) -> Instance:
    """``instance`` with each law of ``laws`` (switch id -> its domain's law) on its switch and
    the other switches of that domain cleared (a domain's law is the maximum of its switches',
    so it is counted once); domains no law names keep their switches as they are."""
    if not laws:
        return instance
    cl = cluster_of(instance)
    learnt = {cl.switch_domain.get(w) for w in laws}
    switches = tuple(
        dataclasses.replace(w, congestion=laws[w.id])
        if w.id in laws
        else dataclasses.replace(w, congestion=NO_SLOWDOWN)
        if cl.switch_domain.get(w.id) in learnt and cl.switch_domain.get(w.id) is not None
        else w
        for w in instance.switches
    )
    return instance.replace(switches=switches)

"""Which GPU each running job holds, on the servers with per-GPU factors (DESIGN.md, "Per-GPU
factors"): the simulator's truth runs a job's workers at ``a f* S`` on a server, ``f*`` the largest
factor of its GPUs there for its application class.

A decision's solution names the GPUs (``Solution.gpus``) when its instance knows the factors
(``oracle`` knowledge); a job started without them, or with GPUs that are no longer free, gets
the lowest free indices (what a device plugin that knows nothing of factors hands out), or, when
the scheduler knows the factors, the fastest free ones for its class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.gpu_profiles import apply_gpu_profiles, read_gpu_profiles
from placement.model.records import ANY_CLASS as ANY
from placement.model.records import Instance
from placement.problem.gpus import factored_servers
from placement.simulation.workload import TraceJob

__all__ = ["GpuBook", "GpuLearner", "with_variability"]


def with_variability(cluster: Instance, specs: Sequence[str], seed: int, draw: str = "medians") -> Instance:
    """``cluster`` with the per-GPU factors of the profiles ``specs`` (``[CLASS=]FILE``: a one-class
    file's class renamed to ``CLASS``), laid out with ``seed`` and ``draw``
    (:func:`placement.estimate.gpu_profiles.apply_gpu_profiles`)."""
    profiles = []
    for spec in specs:
        cls, eq, path = spec.rpartition("=")
        got = read_gpu_profiles(path)
        if eq:
            if len(got) != 1:
                raise InvalidInputError([f"variability {spec!r}: CLASS= needs a file of one class, it has {len(got)}"])
            got = [dataclasses.replace(got[0], app_class=cls)]
        profiles += got
    return apply_gpu_profiles(cluster, profiles, seed=seed, draw=draw)[0]


class GpuBook:
    """The GPUs held on the cluster's factored servers: ``owner[server][gpu]`` = the job."""

    def __init__(self, cluster: Instance, *, knows_factors: bool) -> None:
        self.cluster = cluster
        self.factored = factored_servers(cluster)
        self.knows_factors = knows_factors
        self.owner: dict[int, dict[int, str]] = {
            sp: dict.fromkeys(cluster.servers[sp].held, "(held)") for sp in sorted(self.factored)
        }
        self.jobs: dict[str, dict[int, tuple[int, ...]]] = {}

    def __bool__(self) -> bool:
        return bool(self.factored)

    def take(
        self, job: str, app_class: str | None, alloc: Mapping[int, int], given: Mapping[int, tuple[int, ...]] | None
    ) -> dict[int, float]:
        """Give ``job`` its GPUs on the factored servers of ``alloc`` (``given`` where they are
        free, else by the module's rule); returns ``f*`` per such server."""
        mine: dict[int, tuple[int, ...]] = {}
        worst: dict[int, float] = {}
        for sp, k in sorted(alloc.items()):
            if sp not in self.factored or k <= 0:
                continue
            srv = self.cluster.servers[sp]
            taken = self.owner[sp]
            free = [g for g in range(srv.gpus) if g not in taken]
            want = tuple((given or {}).get(sp, ()))
            if len(want) != k or any(g in taken or not 0 <= g < srv.gpus for g in want):
                f = srv.gpu_factors(app_class)
                order = sorted(free, key=lambda g: (f[g], g)) if self.knows_factors else free
                want = tuple(sorted(order[:k]))
            if len(want) != k:  # pragma: no cover - the engine's counts keep room for them
                raise ValueError(f"server {srv.id!r} has {len(free)} free GPUs, job {job!r} takes {k}")
            for g in want:
                taken[g] = job
            mine[sp] = want
            factors = srv.gpu_factors(app_class)
            worst[sp] = max(factors[g] for g in want)
        self.jobs[job] = mine
        return worst

    def release(self, job: str) -> None:
        for sp, ids in self.jobs.pop(job, {}).items():
            for g in ids:
                self.owner[sp].pop(g, None)

    def held(self, excluding: Iterable[str] = ()) -> dict[int, tuple[int, ...]]:
        """Per factored server, the GPUs held but by the jobs ``excluding`` (those a decision
        places again)."""
        skip = set(excluding)
        return {sp: tuple(sorted(g for g, j in own.items() if j not in skip)) for sp, own in self.owner.items()}

    def scale(self, sps: np.ndarray, a: np.ndarray, worst: Mapping[int, float]) -> np.ndarray:
        """``a`` (per server of ``sps``) times each server's ``f*``."""
        if not worst:
            return a
        return a * np.array([worst.get(int(sp), 1.0) for sp in sps])

    def per_worker(self, job: str, sps: np.ndarray, app_class: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each worker's GPU (``-1`` off the factored servers), its factor and its server's
        ``f*``, for workers listed by server as ``sps`` (a server's workers on its GPUs in
        index order)."""
        mine = self.jobs.get(job, {})
        gpus = np.full(len(sps), -1, dtype=np.int64)
        own, star = np.ones(len(sps)), np.ones(len(sps))
        seen: dict[int, int] = {}
        for w, sp in enumerate(sps.tolist()):
            ids = mine.get(sp)
            if not ids:
                continue
            k = seen.get(sp, 0)
            seen[sp] = k + 1
            f = self.cluster.servers[sp].gpu_factors(app_class)
            gpus[w], own[w], star[w] = ids[k % len(ids)], f[ids[k % len(ids)]], max(f[g] for g in ids)
        return gpus, own, star


class GpuLearner:
    """Per-GPU factors learnt online (``estimated`` knowledge) from each worker's logged time over
    its job's profiled straggler-free time there, divided by its server's believed mean slowdown
    (so that a server's episodes are the server's): per GPU and application class, the geometric
    mean of those ratios, shrunk towards 1 (the median GPU) by :data:`PRIOR` pseudo-observations.
    GPUs no job has run on stay at 1.  A worker's own GPU shows in its own time (the iteration
    waits for the slowest, each worker's compute does not), as in per-rank traces."""

    PRIOR = 2.0
    DAY_S = 86_400.0

    def __init__(self, cluster: Instance) -> None:
        self.cluster = cluster
        self.log_sum: dict[tuple[int, int, str], float] = {}
        self.count: dict[tuple[int, int, str], int] = {}
        self.day1: float | None = None
        """:meth:`rank_corr` at the first observation past one simulated day."""
        self.day1_taken = False

    def observe(
        self,
        book: GpuBook,
        tj: TraceJob,
        sps: np.ndarray,
        d: np.ndarray,
        ratio: np.ndarray,
        means: np.ndarray,
        now: float,
    ) -> np.ndarray:
        """Learn from one logged iteration of ``tj`` at ``now`` (its workers' servers ``sps``,
        times ``d`` at their server's ``f*`` and ratios to its profiled time there); returns each
        worker's time at its own GPU's factor (what the log shows)."""
        if now >= self.DAY_S and not self.day1_taken:
            self.day1, self.day1_taken = self.rank_corr(), True
        gpus, own, star = book.per_worker(tj.id, sps, tj.app_class)
        self.add(sps, gpus, tj.app_class, ratio * own / means[sps])
        return d * own / star

    def add(self, sps: np.ndarray, gpus: np.ndarray, app_class: str | None, ratios: np.ndarray) -> None:
        """Record each worker's ratio (its time over its profiled straggler-free time at factor
        1, over its server's believed mean) against its GPU (``-1``: none to learn)."""
        cls = app_class if app_class is not None else ANY
        for sp, g, r in zip(sps.tolist(), gpus.tolist(), np.log(ratios).tolist()):
            if g >= 0:
                key = (sp, g, cls)
                self.log_sum[key] = self.log_sum.get(key, 0.0) + r
                self.count[key] = self.count.get(key, 0) + 1

    def estimate(self, key: tuple[int, int, str]) -> float:
        return float(np.exp(self.log_sum[key] / (self.count[key] + self.PRIOR)))

    def factors(self) -> dict[int, dict[str, tuple[float, ...]]]:
        """Per server position, ``gpu_slowdowns`` as learnt so far (servers with none left out)."""
        out: dict[int, dict[str, list[float]]] = {}
        for sp, g, cls in self.count:
            rows = out.setdefault(sp, {})
            row = rows.setdefault(cls, [1.0] * self.cluster.servers[sp].gpus)
            row[g] = self.estimate((sp, g, cls))
        return {sp: {c: tuple(v) for c, v in rows.items()} for sp, rows in out.items()}

    def rank_corr(self) -> float | None:
        """Spearman's rank correlation of the learnt factors with the hidden ones, over the
        (GPU, class) pairs observed (``None`` with fewer than 3)."""
        keys = sorted(self.count)
        if len(keys) < 3:
            return None
        learnt = np.array([self.estimate(k) for k in keys])
        hidden = np.array([self.cluster.servers[sp].gpu_factors(None if c == ANY else c)[g] for sp, g, c in keys])
        ranks = [np.argsort(np.argsort(v, kind="stable"), kind="stable").astype(float) for v in (learnt, hidden)]
        if min(r.std() for r in ranks) == 0:
            return None
        return float(np.corrcoef(ranks[0], ranks[1])[0, 1])


def truth_cluster(cluster: Instance, cfg: Any) -> Instance:
    """The cluster a run's truth runs on (``cfg``: its :class:`~placement.simulation.config.SimConfig`):
    the measured law's long-run laws under ``measured`` (what oracle knowledge sees), the hidden
    per-GPU factors laid out by the seed, and Blox's and PAL's locality penalty under
    ``comm="penalty:F"``."""
    from placement.simulation.dynamics import measured_cluster
    from placement.simulation.workload.reference import comm_penalty

    if cfg.dynamics == "measured":
        cluster = measured_cluster(cluster)
    if cfg.variability:
        cluster = with_variability(cluster, cfg.variability, cfg.seed, cfg.variability_draw)
    penalty = comm_penalty(cfg.comm)
    return cluster if penalty is None else cluster.replace(locality_penalty=penalty)

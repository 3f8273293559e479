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

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.gpu_profiles import apply_gpu_profiles, read_gpu_profiles
from placement.model.records import Instance
from placement.problem.gpus import factored_servers

__all__ = ["GpuBook", "with_variability"]


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

"""Sample average approximation (SAA) for independent slowdowns: draw a seeded sample of
joint slowdown scenarios, solve the exact scenario formulation on the sample, and evaluate
the placement under the true distributions.

Labelled as what it is: the sample's optimum and bound are *not* the true objective's, so
the solution reports no bound from it (the sample bound is kept in ``stats.message``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from placement.errors import MethodUnavailableError
from placement.model.records import Instance, Scenarios, Slowdown
from placement.solving.options import Options, Outcome
from placement.solving.registry import first_available

__all__ = ["saa", "sampled_instance", "SAA_SCENARIOS"]

SAA_SCENARIOS = 64
"""Scenarios drawn by ``saa``."""


def sampled_instance(instance: Instance, scenarios: int, seed: int) -> Instance:
    """``instance`` with its independent distributions replaced by ``scenarios`` equally
    likely joint draws (per-job overrides drawn independently, as the model says)."""
    rng = np.random.default_rng(seed)

    def draw(d: Slowdown) -> tuple[float, ...]:
        v = np.asarray(d.values)
        p = np.asarray(d.probs) / sum(d.probs)
        return tuple(float(x) for x in rng.choice(v, size=scenarios, p=p))

    rows = {s.id: draw(s.slowdown) for s in instance.servers if not s.slowdown.is_trivial}
    jobs = tuple(
        dataclasses.replace(j, slowdown={sid: draw(d) for sid, d in j.slowdown.items() if isinstance(d, Slowdown)})
        for j in instance.jobs
    )
    servers = tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in instance.servers)
    return instance.replace(servers=servers, jobs=jobs, scenarios=Scenarios(tuple([1.0 / scenarios] * scenarios), rows))


def saa(instance: Instance, opts: Options) -> Outcome:
    if instance.scenarios is not None:
        raise MethodUnavailableError(
            "saa is for independent distributions; this instance has a scenario table: use milp_highs or cpsat"
        )
    backend = first_available()
    if backend is None:
        raise MethodUnavailableError("saa needs an exact backend: install pulp with highspy, or ortools")
    sample = sampled_instance(instance, SAA_SCENARIOS, opts.seed)
    out = backend.load()(sample, opts)
    path = [f"saa({SAA_SCENARIOS} scenarios, seed {opts.seed})", *out.path]
    sample_bound = "none" if out.bound is None else f"{out.bound:.6g}"
    return Outcome(
        out.assignment,
        path=path,
        backend=out.backend,
        backend_version=out.backend_version,
        message=f"sample average approximation over {SAA_SCENARIOS} sampled scenarios: the sample's bound "
        f"({sample_bound}) is not a bound on the true objective and is not reported",
    )

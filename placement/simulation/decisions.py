"""The loop's decision rules, one home for the simulator and ``placement serve``: the job and
the instance a decision solves (:func:`believed_job`, :func:`decision_instance`), the patience
rule (:func:`waits_until`, :class:`Floors`) and learning the servers from what the running
jobs show (:func:`refit_belief`).  The priced re-plan is :func:`.replanning.priced_replan`.

The simulator calls these on its hidden-truth state; the service on its durable state.  Given
the same jobs, free GPUs, looks and clock they decide the same (``tests/serve/test_parity.py``
drives the service with a simulation's decisions and checks it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from placement.estimate.logs import EMPIRICAL, HALF_LIFE, PRIOR_STRENGTH, ServerEstimate, estimate_from_ratios
from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance, Job, Server, Slowdown
from placement.model.tolerances import TIE_RTOL
from placement.problem.congestion import calm
from placement.problem.reuse import share_derived
from placement.simulation.belief import Belief
from placement.simulation.config import FORECASTING
from placement.simulation.forecast import LOOK_WEIGHT_FIRST, Forecaster, fit_forecaster
from placement.simulation.running import problem_job
from placement.simulation.workload import TraceJob

__all__ = ["believed_job", "decision_instance", "waits_until", "Floors", "refit_belief", "Look"]

Look = tuple[float, Mapping[str, np.ndarray]]
"""One estimate tick's rows: its time and the arrays ``job`` (any codes), ``server`` (server
positions), ``iteration`` and ``ratio`` (a worker's time over its reference time)."""


def believed_job(job: Job, belief: Belief, iterations: int | None = None) -> Job:
    """``job`` as a decision sees it: ``iterations`` to go (its own by default) and the
    belief's own view of the servers over that many of its straggler-free seconds (a
    forecast for its horizon, or a long job's steady rates: :meth:`Belief.overrides`).  A
    job's own slowdown overrides stand; a job of unknown length sees the servers' laws."""
    it = job.iterations if iterations is None else iterations
    if it is None or job.slowdown:
        return dataclasses.replace(job, iterations=it)
    return dataclasses.replace(job, iterations=it, slowdown=belief.overrides(it * job.compute_ms / 1000.0))


def decision_instance(
    cluster: Instance,
    belief: Belief,
    free: Sequence[int] | np.ndarray,
    jobs: Sequence[Job],
    *,
    name: str,
    objective: str,
    template: Instance | None = None,
    held: Mapping[int, tuple[int, ...]] | None = None,
) -> Instance:
    """The instance a decision solves: ``jobs`` (already :func:`believed_job`) on the believed
    servers with ``free`` GPUs each (in cluster order), a ``best_effort`` decision, with the
    cluster's topology and fitted all-reduce terms (those the truth runs on); shares the
    derived arrays of ``template`` when its servers are the same.  ``held``: on servers with
    per-GPU factors, which GPUs are held (server position -> indices)."""
    servers = tuple(
        dataclasses.replace(
            s, used_gpus=int(s.gpus - free[sp]), held_gpus=_held_ids(s, int(s.gpus - free[sp]), held, sp)
        )
        for sp, s in enumerate(belief.servers)
    )
    inst = Instance(
        name=name,
        servers=servers,
        jobs=tuple(jobs),
        switches=belief.switches,
        links=cluster.links,
        scenarios=belief.scenarios,
        objective=objective,
        admission="best_effort",
        comm_terms=cluster.comm_terms,
        locality_penalty=cluster.locality_penalty,
    )
    if template is not None:
        share_derived(inst, template)
    return inst


def waits_until(first_s: float, wait_factor: float, iterations: int, ideal_ms: float, floor_ms: float) -> float | None:
    """The patience rule (ski rental): a job placed at ``ideal_ms`` straggler-free per
    iteration, whose best on the idle cluster is ``floor_ms``, first offered such a placement
    at ``first_s``, may wait for better GPUs until ``first_s`` plus ``wait_factor`` times the
    seconds the placement would add to its run; ``None`` when it loses nothing (within
    :data:`TIE_RTOL`) or the patience is off.  The caller says whether waiting is possible at
    all (jobs running that will free GPUs) and whether the time has come."""
    extra_s = iterations * (ideal_ms - floor_ms) / 1000.0
    if wait_factor <= 0 or extra_s <= TIE_RTOL * iterations * ideal_ms / 1000.0:
        return None
    return first_s + wait_factor * extra_s


class Floors:
    """Each job shape's least straggler-free iteration time on the idle ``cluster`` (a lower
    bound, :func:`job_lower_bound` with every slowdown 1 and every GPU free, on the servers the
    job may use), cached by the job less what does not shape its placement.  Per-GPU factors are
    left out (every GPU at the fleet's median): a job waits for a better placement, not for GPUs
    faster than the median one, which would hold the queue for a lottery win."""

    def __init__(self, cluster: Instance) -> None:
        servers = tuple(dataclasses.replace(s, slowdown=Slowdown(), gpu_slowdowns={}) for s in cluster.servers)
        self.blank = cluster.replace(servers=servers, jobs=(), scenarios=None, switches=calm(cluster.switches))
        self.cache: dict[str, float] = {}

    def __call__(self, job: Job | TraceJob) -> float:
        if isinstance(job, TraceJob):
            job = problem_job(job)
        # the job less what does not shape its placement (so new shape fields count too)
        shape = dataclasses.replace(job, id="", iterations=1, weight=1.0, deadline_s=None, slowdown={})
        key = repr(shape)
        floor = self.cache.get(key)
        if floor is None:
            inst = self.blank.replace(jobs=(dataclasses.replace(shape, id=job.id),))
            share_derived(inst, self.blank)
            floor = self.cache[key] = job_lower_bound(inst, 0)
        return floor


def refit_belief(
    looks: Sequence[Look],
    now: float,
    server_ids: Sequence[str],
    *,
    plan_by: str,
    estimate_every_s: float,
    previous: Forecaster | None,
    kept: np.ndarray | None = None,
) -> tuple[dict[str, Slowdown], Forecaster | None, dict[int, ServerEstimate]]:
    """Each server's law learnt from ``looks`` (the rows of the estimate window, one entry
    per tick) at ``now`` by the estimator of ``placement estimate`` (in cluster order), each
    server's estimate by position, and with ``plan_by`` ``forecast`` the forecaster (its last looks and the fleet's episode length).  Forecasting
    weighs every look the same (the law is the long run's), a look through several workers
    once, and looks as the independent observations they are (``previous``'s look weight at
    ticks ``estimate_every_s`` apart); otherwise rows weigh by recency.  ``kept`` (one weight
    per row) forgets what a server showed before its law changed."""
    forecasting = plan_by in FORECASTING
    half_life, weights, strength = HALF_LIFE, None, PRIOR_STRENGTH
    if forecasting:
        half_life, strength = math.inf, EMPIRICAL
        per_look = [1.0 / np.bincount(c["server"])[c["server"]] for _, c in looks]
        weights = np.concatenate(per_look) * (
            previous.look_weight(estimate_every_s) if previous is not None else LOOK_WEIGHT_FIRST
        )
    if kept is not None:
        weights = kept if weights is None else weights * kept
    lg = {k: np.concatenate([c[k] for _, c in looks]) for k in ("job", "server", "iteration", "ratio")}
    est, _ = estimate_from_ratios(
        lg["job"],
        lg["server"],
        lg["iteration"],
        lg["ratio"],
        servers=range(len(server_ids)),
        half_life=half_life,
        weights=weights,
        prior_strength=strength,
    )
    laws = {server_ids[sp]: est[sp].slowdown for sp in range(len(server_ids)) if sp in est}
    forecaster = None
    if forecasting:
        forecaster = fit_forecaster(
            [(t, c["server"], c["ratio"]) for t, c in looks], now, laws, server_ids, aged=plan_by == "aged"
        )
    return laws, forecaster, est


def forecaster_to_dict(f: Forecaster | None) -> dict[str, Any] | None:
    """A forecaster's state less its laws (the estimates, stored apart), as JSON."""
    if f is None:
        return None
    return {
        "mean_episode_s": f.mean_episode_s,
        "seen": {s: list(v) for s, v in f.seen.items()},
        "episode_age": dict(f.episode_age),
        "onset_s": f.onset_s,
        "lasting_s": f.lasting_s,
        "aged": f.aged,
    }


def forecaster_from_dict(d: Mapping[str, Any] | None, laws: Mapping[str, Slowdown]) -> Forecaster | None:
    if d is None:
        return None
    seen = {s: (float(v[0]), float(v[1])) for s, v in d["seen"].items()}
    ages = {s: float(a) for s, a in d.get("episode_age", {}).items()}  # stored before 2026-12-07: none

    def length(key: str) -> float | None:
        return None if d.get(key) is None else float(d[key])

    return Forecaster(
        dict(laws),
        seen,
        float(d["mean_episode_s"]),
        ages,
        length("onset_s"),
        length("lasting_s"),
        bool(d.get("aged", False)),
    )


def _held_ids(server: Server, used: int, held: Mapping[int, tuple[int, ...]] | None, sp: int) -> tuple[int, ...] | None:
    """The held GPUs of a decision's server: ``held``'s where it says (made up to ``used`` with
    the lowest free indices, a held count the book does not name), else ``None`` (the first)."""
    ids = None if held is None else held.get(sp)
    if ids is None:
        return None
    ids = tuple(ids)[:used]
    if len(ids) < used:
        extra = [g for g in range(server.gpus) if g not in set(ids)][: used - len(ids)]
        ids = tuple(sorted(ids + tuple(extra)))
    return ids

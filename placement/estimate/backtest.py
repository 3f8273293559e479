"""Backtest of the slowdown estimator on the PAI per-worker logs.

Each job's log is split in time: estimates are fitted on the first ``train_fraction`` of
its iterations and scored on the rest, against two priors: **no-straggler** (every server
at 1.0, smoothed to give the straggle bins probability 1e-3 in all) and **fleet** (every
server gets the fleet's distribution).  Three scores:

1. predictive log-likelihood per held-out sample of the binned ratio to the median worker
   (probabilities floored at 1e-6);
2. absolute error of each 10-worker job's predicted expected slowest-worker time (in units
   of its median worker: ``E[max_w S_w]`` by the exact evaluator) against the mean, over the
   held-out iterations, of the observed max / median;
3. a replay: the 40 workers as 1-GPU servers in 4 racks, a set of jobs placed by ``auto``
   under each model's distributions, every placement evaluated under the held-out truth
   (each server's empirical held-out distribution).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placement.estimate.logs import (
    BIN_EDGES,
    HALF_LIFE,
    PRIOR_STRENGTH,
    LogData,
    LogError,
    bin_index,
    bin_values,
    estimate_from_logs,
    ratios,
    read_pai,
)
from placement.evaluation.evaluate import evaluate
from placement.model.records import Instance, Job, Link, Server, Slowdown, Switch
from placement.solving.driver import solve

__all__ = ["BacktestResult", "backtest_pai", "split_log", "pai_instance"]

PROB_FLOOR = 1e-6


@dataclass(frozen=True)
class BacktestResult:
    train_fraction: float
    samples_train: int
    samples_test: int
    loglik: dict[str, float]
    """Mean predictive log-likelihood per held-out sample, per model."""
    job_error: dict[str, dict[str, float]]
    """Per model, per job: |predicted - observed| expected slowest-worker time (median units)."""
    observed: dict[str, float]
    predicted: dict[str, dict[str, float]]
    replay: dict[str, float]
    """Per model: the true objective of its placement (lower is better)."""


def split_log(log: LogData, fraction: float) -> tuple[LogData, LogData]:
    train = np.zeros(len(log.duration), dtype=bool)
    for j in np.unique(log.job):
        sel = log.job == j
        cut = np.quantile(log.iteration[sel], fraction)
        train |= sel & (log.iteration <= cut)
    pick = log.rows
    return pick(train), pick(~train)


def _bins_of(d: Slowdown, nb: int) -> np.ndarray:
    """Probability of each bin under ``d`` (its support values fall in their bins)."""
    p = np.zeros(nb)
    for v, q in zip(d.values, d.probs):
        p[int(bin_index(np.array([v]))[0])] += q
    return p


def pai_instance(servers: Sequence[str], dists: dict[str, Slowdown], jobs: Sequence[Job], name: str) -> Instance:
    """The PAI workers as 1-GPU servers (``rack/worker`` ids), one rack switch per rack
    prefix under one spine: the cluster of the backtest's replay."""
    racks = sorted({s.split("/")[0] for s in servers})
    srv = tuple(Server(s, 1, "pai", 100.0, slowdown=dists[s]) for s in servers)
    sw = tuple(Switch(f"tor-{r}") for r in racks) + (Switch("spine"),)
    links = tuple(Link(s, f"tor-{s.split('/')[0]}", 100.0) for s in servers) + tuple(
        Link(f"tor-{r}", "spine", 25.0) for r in racks
    )
    return Instance(
        name=name,
        servers=srv,
        jobs=tuple(jobs),
        switches=sw,
        links=links,
        source="placement.backtest: Alibaba PAI cluster-trace-gpu-v2020 per-worker logs",
    )


def backtest_pai(
    paths: Sequence[str | os.PathLike[str]],
    *,
    train_fraction: float = 0.5,
    half_life: float = HALF_LIFE,
    prior_strength: float = PRIOR_STRENGTH,
    time_limit_s: float = 5.0,
    seed: int = 0,
) -> BacktestResult:

    log = read_pai(paths)
    train, test = split_log(log, train_fraction)
    short = [name for name, part in (("training", train), ("held-out", test)) if not len(ratios(part)[3])]
    if short:
        raise LogError(
            [
                f"the {' and '.join(short)} part{'s have' if len(short) > 1 else ' has'} no iteration with two "
                f"or more workers: the files hold "
                f"{len(log.duration)} row(s); a backtest needs several iterations of multi-worker jobs"
            ],
            source=", ".join(map(str, paths)),
        )
    est, fleet = estimate_from_logs(train, half_life=half_life, prior_strength=prior_strength)
    servers = sorted(est)
    nb = len(BIN_EDGES) + 1
    eps = 1e-3
    none = (
        fleet
        if len(fleet.values) < 2
        else Slowdown(
            tuple([1.0] + [float(v) for v in fleet.values[1:]]),
            tuple([1 - eps] + [eps / (len(fleet.values) - 1)] * (len(fleet.values) - 1)),
        )
    )
    models = {
        "estimate": {s: est[s].slowdown for s in servers},
        "fleet prior": dict.fromkeys(servers, fleet),
        "no-straggler prior": dict.fromkeys(servers, none),
    }
    tj, ts, tit, tr = ratios(test)
    tb = bin_index(tr)
    loglik = {}
    for m, dists in models.items():
        table = {s: np.maximum(_bins_of(dists[s], nb), PROB_FLOOR) for s in servers}
        loglik[m] = float(np.mean([math.log(table[s][b]) for s, b in zip(ts, tb)]))
    # expected slowest-worker time of each job, predicted vs observed on the held-out part
    jobs_ids = sorted(np.unique(log.job))
    observed = {}
    for j in jobs_ids:
        sel = tj == j
        mx: dict[int, float] = {}
        for t, r in zip(tit[sel], tr[sel]):
            mx[int(t)] = max(mx.get(int(t), 0.0), float(r))
        observed[str(j)] = float(np.mean(list(mx.values()))) if mx else math.nan
    predicted: dict[str, dict[str, float]] = {}
    for m, dists in models.items():
        members = {j: [s for s in servers if s.startswith(f"{j}/")] for j in jobs_ids}
        inst = pai_instance(servers, dists, [Job(f"{j}", len(members[j]), 1.0, 0.0) for j in jobs_ids], f"pai-{m}")
        ev = evaluate(inst, {f"{j}": dict.fromkeys(members[j], 1) for j in jobs_ids})
        predicted[m] = {str(j): ev.jobs[str(j)].expected_iteration_ms for j in jobs_ids}
    job_error = {m: {j: abs(predicted[m][j] - observed[j]) for j in observed} for m in models}
    # replay: where to place new jobs, judged under the held-out truth
    truth = {}
    for s in servers:
        sel = ts == s
        counts = np.bincount(tb[sel], minlength=nb).astype(float)
        vals = bin_values(tr, tb)
        keep = counts > 0
        truth[s] = Slowdown(tuple(float(v) for v in vals[keep]), tuple(float(c) for c in counts[keep] / counts.sum()))
    new_jobs = [Job(f"new{k}", 8, 100.0, 100.0) for k in range(4)]
    true_inst = pai_instance(servers, truth, new_jobs, "pai-truth")
    replay = {}
    for m, dists in models.items():
        sol = solve(pai_instance(servers, dists, new_jobs, f"pai-{m}"), "auto", time_limit_s=time_limit_s, seed=seed)
        replay[m] = evaluate(true_inst, sol.assignment).objective
    return BacktestResult(
        train_fraction, len(train.duration), len(test.duration), loglik, job_error, observed, predicted, replay
    )

"""Proactive slowdown estimation: from per-worker iteration logs and from per-server
resource telemetry to the slowdown fields of an instance.

**Iteration logs** (columns ``job, worker, server, iteration, duration``; the PAI files are
read by :func:`read_pai`): each worker's duration is divided by the median worker's of the
same job and iteration; the ratios are binned at :data:`BIN_EDGES` (below 1.05: no
slowdown).  Per server, samples are weighted by recency, ``0.5 ** (age / half_life)`` in
iterations of the server's own job, so that a server that recovered is trusted again.  The
probability that the server straggles gets a **Beta prior** whose mean is the fleet's
straggle rate and whose strength is ``prior_strength`` pseudo-iterations: it is conjugate to
the per-iteration straggle indicator (closed-form posterior mean ``(k + a) / (n + a + b)``
with weighted counts), and it gives an unseen server exactly the fleet's rate.  How much a
straggling server slows down is shrunk the same way, a Dirichlet prior towards the fleet's
distribution over the straggle bins.  A bin's support value is the fleet's mean ratio in it.

**Telemetry** (columns ``server, time, cpu, memory, network, gpu``, utilisations in [0, 1],
on a regular time step): per server and resource an AR(``order``) model with intercept,
fitted by least squares, forecasts utilisation ``horizon`` steps ahead with its error
variance ``sigma^2 sum psi_i^2``.  The forecast is discretised to three points
(``mean -/+ sqrt(3) sd`` with probabilities 1/6, 2/3, 1/6: the same mean and variance).
**Contention**: a job whose workers need a fraction ``d`` of a server's resource runs at
``S = max(1, d / (1 - u))`` when the other tenants use ``u`` of it; the job's slowdown on a
server is the product of the server's own (log-based) slowdown and the worst resource's
contention, written as that job's override for that server.

**Per-operation traces of hybrid jobs** (:mod:`.optrace`, ByteDance's per-rank format): a rank
is compared with its peers only (its own stage and model chunk, the same step and microbatch,
across data-parallel replicas), robustly to sequence lengths that vary by microbatch; the
ratios go through the same estimator, one estimate per rank, and a server gets its slowest
rank's.  Its data-parallel collectives (the shortest rank of each: the pure transfer) tell the
links, as step logs do.

**Congested links** (:mod:`.congestion`, step logs ``job, servers, time, duration, compute``
through :func:`read_step_log`, or an op trace's transfers): a job's look in a time bin is its
communication over its own median, read as 1 within :data:`NOISE_SIGMAS` noise deviations
(scaled MAD); a domain's look is the least among the jobs crossing it, explained away (read as
1) when every job crossing it also crosses a narrower domain looking as much (within
:data:`EXPLAIN_TOLERANCE`); each domain's looks go through the same estimator with a half-life
of :data:`HALF_LIFE_TICKS` bins, and the law is written on the domain's first switch
(:func:`with_congestion`).  The simulator's ``estimated`` knowledge learns links by the same
rule.
"""

from __future__ import annotations

from placement.estimate.apply import apply_estimates
from placement.estimate.backtest import BacktestResult, backtest_pai, pai_instance, split_log
from placement.estimate.congestion import (
    EXPLAIN_TOLERANCE,
    HALF_LIFE_TICKS,
    MIN_COMM_SHARE,
    NOISE_SIGMAS,
    CongestionEstimate,
    DomainEstimate,
    JobSeries,
    StepLog,
    StepLogError,
    congestion_from_steps,
    domain_laws,
    domain_looks,
    job_look,
    learn_congestion,
    read_step_log,
    with_congestion,
)
from placement.estimate.logs import (
    BIN_EDGES,
    HALF_LIFE,
    PRIOR_STRENGTH,
    SHAPE_STRENGTH,
    LogData,
    LogError,
    ServerEstimate,
    bin_index,
    bin_values,
    estimate_from_logs,
    estimate_from_ratios,
    ratios,
    read_iteration_log,
    read_pai,
)
from placement.estimate.optrace import (
    OpTrace,
    OpTraceError,
    Transfers,
    congestion_from_op_trace,
    estimate_from_op_trace,
    read_op_trace,
    read_rank_map,
)
from placement.estimate.telemetry import (
    RESOURCES,
    Forecast,
    Telemetry,
    TelemetryError,
    contention_overrides,
    forecast,
    product,
    read_demands,
    read_telemetry,
)
from placement.estimate.workflow import Estimated, estimate_instance, read_server_map

__all__ = [
    "BIN_EDGES",
    "EXPLAIN_TOLERANCE",
    "HALF_LIFE_TICKS",
    "MIN_COMM_SHARE",
    "NOISE_SIGMAS",
    "CongestionEstimate",
    "DomainEstimate",
    "JobSeries",
    "StepLog",
    "StepLogError",
    "Transfers",
    "congestion_from_op_trace",
    "congestion_from_steps",
    "domain_laws",
    "domain_looks",
    "job_look",
    "learn_congestion",
    "read_step_log",
    "with_congestion",
    "HALF_LIFE",
    "PRIOR_STRENGTH",
    "RESOURCES",
    "SHAPE_STRENGTH",
    "BacktestResult",
    "Estimated",
    "estimate_instance",
    "read_server_map",
    "Forecast",
    "LogData",
    "LogError",
    "OpTrace",
    "OpTraceError",
    "estimate_from_op_trace",
    "read_op_trace",
    "read_rank_map",
    "ServerEstimate",
    "Telemetry",
    "TelemetryError",
    "apply_estimates",
    "backtest_pai",
    "bin_index",
    "bin_values",
    "contention_overrides",
    "estimate_from_logs",
    "estimate_from_ratios",
    "forecast",
    "pai_instance",
    "product",
    "ratios",
    "read_demands",
    "read_iteration_log",
    "read_pai",
    "read_telemetry",
    "split_log",
]

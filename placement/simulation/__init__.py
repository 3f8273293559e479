"""Online, trace-driven simulation of the proactive loop: jobs arrive from a trace, servers
drift in and out of slow states, the scheduler places each gang with any method and learns
from the iteration times it observes; judged by job completion times."""

from __future__ import annotations

from placement.simulation.engine import (
    KNOWLEDGE,
    QUEUES,
    SUMMARY_FIELDS,
    SimConfig,
    SimResult,
    SimulationError,
    simulate,
)
from placement.simulation.runner import SimRun, plan_runs, simulate_sweep
from placement.simulation.workload import MODELS, TraceError, TraceJob, Workload, read_trace

__all__ = [
    "KNOWLEDGE",
    "MODELS",
    "QUEUES",
    "SUMMARY_FIELDS",
    "SimConfig",
    "SimResult",
    "SimRun",
    "SimulationError",
    "TraceError",
    "TraceJob",
    "Workload",
    "plan_runs",
    "read_trace",
    "simulate",
    "simulate_sweep",
]

"""Parity with the simulator: ``placement serve``, driven through its HTTP API with a trace
window's events on a test clock (the rows the simulator's scheduler logged, its refits, its
offers, starts, finishes and re-plans; :mod:`support.parity`), makes the simulator's decisions:
the same placements, the same jobs waiting for better GPUs and the same moves, with ``oracle``
and ``estimated`` knowledge.  One decision rule in one place
(:mod:`placement.simulation.decisions`, :func:`placement.simulation.replanning.price_movers`)."""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient
from support.parity import Clock, events, replay

from placement.model.records import Slowdown
from placement.serve import ServeConfig, Service, Store, create_app
from placement.simulation.engine import SimConfig, simulate
from placement.simulation.runner import SimRun, load_inputs

WINDOW = {"window_start_s": 4_320_000.0, "window_s": 4 * 3600.0}
"""cluster04's busy day 50, four hours of arrivals (138 jobs) on the bundled 128-GPU ``demo``
cluster: jobs wait for better GPUs and re-plans move some."""
MIXED = {**WINDOW, "ps_fraction": 0.2, "hybrid_fraction": 0.9}
"""The same window with 25 parameter-server jobs and 20 hybrid-parallel ones (their shards and
stage matrices compared too)."""


@pytest.mark.parametrize(
    "knowledge,trace",
    [("estimated", WINDOW), ("oracle", WINDOW), ("estimated", MIXED)],
    ids=["estimated", "oracle", "mixed"],
)
def test_the_service_makes_the_simulators_decisions(tmp_path, knowledge, trace):
    cluster, workload = load_inputs(SimRun("demo", "elasticflow-cluster04", trace))
    cfg = SimConfig(method="auto", knowledge=knowledge, replan="on", restart_s=300.0, seed=0)
    decisions, logs = tmp_path / "decisions.jsonl", tmp_path / "logs.csv"
    simulate(cluster, workload, cfg, log_path=str(logs), decisions_path=str(decisions))
    told = cluster
    if knowledge == "estimated":  # the service knows the cluster, not its hidden laws
        told = cluster.replace(
            servers=tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in cluster.servers), scenarios=None
        )
    clock = Clock()
    config = ServeConfig(
        knowledge=knowledge,
        ratio_to="profiled",  # the simulator logs compute times
        refit_every_s=cfg.estimate_every_s,
        reservation_s=1e9,
        seed=cfg.seed,
    )
    svc = Service(Store.open(tmp_path / "s.db"), told, config, clock)
    out = replay(TestClient(create_app(svc)), clock, events(decisions, logs if knowledge == "estimated" else None))
    assert out["differences"] == 0, out["diffs"]
    seen = out["seen"]  # every decision played: placements, waits (patience), re-plans, refits
    assert seen["place"] > 100 and seen["replan"] >= 10 and seen.get("preempt", 0) == 0, seen
    if knowledge == "estimated":
        assert seen["refit"] >= 10 and seen["rows"] >= 10, seen

"""Every method returns within its time limit: max(1 s, 10%) past it at most, on random
instances (parameter-server and hybrid jobs, scenarios, capacities) with short limits."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import placement
from placement.errors import MethodUnavailableError
from placement.solving import REGISTRY
from placement.testing import check_solution, instances

METHODS = [m.name for m in REGISTRY if m.available]


def _returns_in_time(inst, limit):
    for name in METHODS:
        t0 = time.monotonic()
        try:
            sol = placement.solve(inst, name, time_limit_s=limit)
        except MethodUnavailableError:  # a method that refuses the instance (saa on scenarios)
            sol = None
        wall = time.monotonic() - t0
        assert wall <= limit + max(1.0, 0.1 * limit), (name, wall, limit, sol and sol.stats.get("path"))
        if sol is not None:
            check_solution(inst, sol)


@settings(max_examples=12, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instances(max_servers=6, max_jobs=4, max_gpus=4), st.sampled_from([0.05, 0.2, 0.5]))
def test_every_method_returns_within_its_time_limit(inst, limit):
    _returns_in_time(inst, limit)


@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instances(max_servers=5, max_jobs=3, max_gpus=2, parameter_servers=True), st.sampled_from([0.05, 0.2]))
def test_every_method_returns_within_its_time_limit_on_parameter_server_jobs(inst, limit):
    _returns_in_time(inst, limit)


@settings(max_examples=6, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instances(max_servers=5, max_jobs=3, max_gpus=4, hybrid=True), st.sampled_from([0.05, 0.2]))
def test_every_method_returns_within_its_time_limit_on_hybrid_jobs(inst, limit):
    _returns_in_time(inst, limit)

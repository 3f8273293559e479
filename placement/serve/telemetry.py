"""GPU telemetry pulled from Prometheus for the service's estimates: NVIDIA DCGM exporter's
``DCGM_FI_DEV_SM_CLOCK`` and ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` (``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``
in older exporters), read through Prometheus' HTTP API (``/api/v1/query_range``).

A GPU's look at a step: while it is idle (reason bit ``GpuIdle``) it says nothing; while a
slowdown reason is set (software power cap, hardware slowdown, software or hardware thermal
slowdown, power brake: mask :data:`THROTTLE_MASK`) its slowdown is ``reference / SM clock``,
the reference being the fleet's 95th percentile SM clock over the window (the clock of a busy
healthy GPU); otherwise it runs at full speed (1).  Without the reasons metric every non-zero
clock is compared with the reference.  A server's look is its slowest GPU's (a job there waits
for it).  The looks go to the estimator of ``placement estimate`` as the iterations of one
pseudo-job, ``dcgm``, beside the pushed iteration rows (:func:`looks`).

The host label is ``Hostname`` (released exporter images) or ``hostname`` (newer), and maps to
a server by ``hosts`` (default: the host's name is the server's id; a CSV ``host,server`` is read
by :func:`placement.estimate.workflow.read_server_map` with ``key="host"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Prometheus",
    "TelemetryError",
    "THROTTLE_MASK",
    "IDLE",
    "looks",
    "CLOCK",
    "REASONS",
]

CLOCK = "DCGM_FI_DEV_SM_CLOCK"
REASONS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
IDLE = 0x1
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
"""NVML's clock event reasons that slow a busy GPU: SW power cap, HW slowdown, SW thermal, HW
thermal, HW power brake."""
REFERENCE_QUANTILE = 0.95


class TelemetryError(Exception):
    """Prometheus did not answer, or answered nothing usable (the estimates stay as they are)."""


@dataclass
class Prometheus:
    """Where the telemetry is, and how to read it."""

    url: str
    hosts: Mapping[str, str] = field(default_factory=dict)
    step_s: float = 60.0
    timeout_s: float = 5.0

    def _range(self, query: str, start: float, end: float) -> list[dict[str, Any]]:
        import httpx

        try:
            r = httpx.get(
                f"{self.url.rstrip('/')}/api/v1/query_range",
                params={"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{self.step_s:g}"},
                timeout=self.timeout_s,
            )
        except httpx.HTTPError as e:
            raise TelemetryError(f"Prometheus at {self.url} did not answer: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            raise TelemetryError(f"Prometheus at {self.url} answered {r.status_code}: {r.text[:200]}")
        try:
            body = r.json()
            if body.get("status") != "success":
                raise TelemetryError(f"Prometheus at {self.url}: {body.get('error', body)}")
            return list(body["data"]["result"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise TelemetryError(f"Prometheus at {self.url} answered something else than a range: {e}") from None

    def series(self, start: float, end: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The SM clock series and the clock event reasons series (the first name that has any)."""
        clocks = self._range(CLOCK, start, end)
        reasons: list[dict[str, Any]] = []
        for name in REASONS:
            reasons = self._range(name, start, end)
            if reasons:
                break
        return clocks, reasons


def _gpu_key(labels: Mapping[str, str], hosts: Mapping[str, str]) -> tuple[str, str] | None:
    host = labels.get("Hostname") or labels.get("hostname")
    if not host:
        return None
    return hosts.get(host, host), str(labels.get("UUID") or labels.get("gpu") or "")


def looks(
    clocks: list[dict[str, Any]],
    reasons: list[dict[str, Any]],
    servers: set[str],
    hosts: Mapping[str, str],
    start: float,
    step_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """``(job, server, iteration, slowdown)`` looks of the servers (the estimator's input), and
    counts: GPU series used, series of unknown hosts skipped."""
    reason_at: dict[tuple[str, str], dict[float, int]] = {}
    for s in reasons:
        key = _gpu_key(s.get("metric", {}), hosts)
        if key is not None:
            reason_at[key] = {float(t): int(float(v)) for t, v in s.get("values", []) if _finite(v)}
    per_gpu: dict[tuple[str, str], list[tuple[float, float]]] = {}
    unknown: set[str] = set()
    for s in clocks:
        key = _gpu_key(s.get("metric", {}), hosts)
        if key is None:
            continue
        if key[0] not in servers:
            unknown.add(key[0])
            continue
        per_gpu.setdefault(key, []).extend((float(t), float(v)) for t, v in s.get("values", []) if _finite(v))
    busy = [
        c
        for key, pts in per_gpu.items()
        for t, c in pts
        if c > 0 and not (reason_at.get(key, {}).get(t, 0) & (IDLE | THROTTLE_MASK))
    ]
    all_clocks = [c for pts in per_gpu.values() for _, c in pts if c > 0]
    if not all_clocks:
        empty = np.zeros(0)
        return (
            empty.astype(str),
            empty.astype(str),
            empty.astype(np.int64),
            empty,
            {"gpu_series": 0, "unknown_hosts": len(unknown)},
        )
    ref = float(np.quantile(np.array(busy or all_clocks), REFERENCE_QUANTILE))
    worst: dict[tuple[str, int], float] = {}
    for key, pts in per_gpu.items():
        rs = reason_at.get(key)
        for t, c in pts:
            if c <= 0:
                continue
            if rs is not None:
                bits = rs.get(t)
                if bits is None or bits & IDLE:
                    continue
                slow = max(1.0, ref / c) if bits & THROTTLE_MASK else 1.0
            else:
                slow = max(1.0, ref / c)
            k = (key[0], int(round((t - start) / step_s)))
            worst[k] = max(worst.get(k, 1.0), slow)
    items = sorted(worst.items())
    job = np.array(["dcgm"] * len(items))
    server = np.array([s for (s, _), _ in items])
    it = np.array([i for (_, i), _ in items], dtype=np.int64)
    r = np.array([v for _, v in items], dtype=float)
    return job, server, it, r, {"gpu_series": len(per_gpu), "unknown_hosts": len(unknown)}


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False

"""Benchmarks quoted in the README and the issue notes: ``python -m placement.bench WHAT``
(see :mod:`placement.bench.benchmarks` for the list)."""

from __future__ import annotations

from placement.bench.benchmarks import bench_evaluator, bench_methods, main

__all__ = ["bench_evaluator", "bench_methods", "main"]

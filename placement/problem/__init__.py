"""The problem: what is derived from an instance (the cluster's bandwidth domains, the
evaluator's arrays), the rules of the model written once, and the mutable working state
the constructive methods share."""

from __future__ import annotations

from placement.problem.arrays import EvalIndex, arrays_of, job_groups
from placement.problem.state import State
from placement.problem.topology import Cluster, Domain, cluster_of, instance_graph
from placement.problem.variants import without_slowdowns

__all__ = [
    "Cluster",
    "Domain",
    "EvalIndex",
    "State",
    "arrays_of",
    "cluster_of",
    "instance_graph",
    "job_groups",
    "without_slowdowns",
]

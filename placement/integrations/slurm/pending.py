"""Slurm's jobs as ``squeue --json`` prints them (Slurm 21.08 and newer), read for the live loop:
which are pending and how many GPUs each asks for, in what shape, and the ``scontrol update``
that pins a pending job to the nodes a placement chose.

A job's GPUs: ``tres_per_task`` ``gres:gpu:N`` (``--gpus-per-task``) gives ``tasks x N`` GPUs,
one worker each; else ``tres_per_node`` ``gres:gpu:G`` (``--gres=gpu:G``) gives ``node_count x
G`` GPUs in groups of ``G`` that share a node; else ``tres_per_job`` ``gres:gpu:N`` (``--gpus``).
A job's model comes from its comment, ``placement:compute_ms=120,gradient_mb=400`` (and
``iterations``), else the service's defaults.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from placement.errors import InvalidInputError
from placement.integrations.slurm.hostlist import compress_hostlist, expand_hostlist

__all__ = ["SlurmJob", "read_squeue_json", "update_argv", "ENDED", "STARTED", "COMMENT_PREFIX"]

ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
)
"""Job states after which a job holds no GPU."""
STARTED = frozenset({"CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"})
"""Job states in which a job holds its nodes."""
COMMENT_PREFIX = "placement:"
_GPU = re.compile(r"(?:^|,)(?:gres[:/])?gpu(?::[\w.-]+)?:(\d+)(?:,|$)")
_FIELDS = {"compute_ms": float, "gradient_mb": float, "iterations": int}


@dataclass(frozen=True)
class SlurmJob:
    job_id: int
    name: str
    state: str
    partition: str
    gpus: int
    """GPUs in all (0: not a GPU job)."""
    per_node: int | None
    """GPUs that must share a node (``--gres=gpu:G``), or None (any split)."""
    node_count: int
    required_nodes: tuple[str, ...]
    nodes: tuple[str, ...]
    model: Mapping[str, float | int] = field(default_factory=dict)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"


def _gpus(text: Any) -> int | None:
    if not isinstance(text, str) or not text:
        return None
    m = _GPU.search(text)
    return int(m.group(1)) if m else None


def _state(x: Any) -> str:
    """A job state: a string (22.05) or a list of them (23.02 and newer: the base state first)."""
    if isinstance(x, list):
        return str(x[0]) if x else ""
    return str(x or "")


def _count(x: Any) -> int:
    """A count: an integer, or 23.02's ``{"set": true, "number": N}``."""
    if isinstance(x, Mapping):
        x = x.get("number")
    return int(x) if isinstance(x, int) and not isinstance(x, bool) else 0


def _model(comment: Any, where: str, problems: list[str]) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    if not isinstance(comment, str) or not comment.startswith(COMMENT_PREFIX):
        return out
    for item in comment[len(COMMENT_PREFIX) :].split(","):
        key, _, value = item.strip().partition("=")
        if not key:
            continue
        kind = _FIELDS.get(key)
        if kind is None:
            problems.append(f"{where}: comment names {key!r}; it may give {', '.join(_FIELDS)}")
            continue
        try:
            v = kind(value)
        except ValueError:
            problems.append(f"{where}: comment's {key} must be a number, got {value!r}")
            continue
        if not (math.isfinite(v) and v > 0):
            problems.append(f"{where}: comment's {key} must be > 0, got {value!r}")
            continue
        out[key] = v
    return out


def read_squeue_json(text: str) -> list[SlurmJob]:
    """The jobs of ``squeue --json``; malformed ones named, all at once."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError([f"squeue --json: not JSON ({e.msg} at line {e.lineno})"]) from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("jobs"), list):
        raise InvalidInputError(["squeue --json: no 'jobs' list"])
    out, problems = [], []
    for k, j in enumerate(doc["jobs"]):
        where = f"jobs[{k}]"
        if not isinstance(j, Mapping) or not isinstance(j.get("job_id"), int):
            problems.append(f"{where}: a job needs an integer job_id")
            continue
        where = f"job {j['job_id']}"
        tasks, nodes_n = _count(j.get("tasks")), _count(j.get("node_count"))
        per_task, per_node, per_job = (
            _gpus(j.get("tres_per_task")),
            _gpus(j.get("tres_per_node")),
            _gpus(j.get("tres_per_job")),
        )
        group: int | None = None
        if per_task:
            gpus = max(1, tasks) * per_task
        elif per_node:
            gpus, group = max(1, nodes_n) * per_node, per_node
        else:
            gpus = per_job or 0
        out.append(
            SlurmJob(
                job_id=int(j["job_id"]),
                name=str(j.get("name") or ""),
                state=_state(j.get("job_state")),
                partition=str(j.get("partition") or ""),
                gpus=gpus,
                per_node=group,
                node_count=max(1, nodes_n),
                required_nodes=tuple(expand_hostlist(j["required_nodes"])) if j.get("required_nodes") else (),
                nodes=tuple(expand_hostlist(j["nodes"])) if j.get("nodes") else (),
                model=_model(j.get("comment"), where, problems),
            )
        )
    if problems:
        raise InvalidInputError(problems, source="squeue --json")
    return out


def update_argv(job: SlurmJob, assignment: Mapping[str, int]) -> list[str] | None:
    """``scontrol update`` pinning ``job`` to the servers of ``assignment`` ({node: GPUs}), or
    None when Slurm cannot say it: a job whose GPUs come per node (``--gres=gpu:G``) placed with
    other than ``G`` on some node."""
    nodes: Sequence[str] = sorted(assignment)
    if job.per_node is not None and any(k != job.per_node for k in assignment.values()):
        return None
    return [
        "scontrol",
        "update",
        f"JobId={job.job_id}",
        f"NumNodes={len(nodes)}",
        f"ReqNodeList={compress_hostlist(list(nodes))}",
    ]

"""Read back what Kubernetes manifests pin: a Volcano task's node affinity times its
``replicas``; a PodGroup pod's node affinity; a Kueue Job's ``placement.io/assignment``
annotation (advice).  The job id is the ``placement.io/job-id`` annotation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from placement.integrations.found import Found
from placement.integrations.kubernetes.keys import (
    ASSIGNMENT_ANNOTATION,
    GPU_RESOURCE,
    JOB_ID_ANNOTATION,
    ROLE_ANNOTATION,
    SHARDS_ANNOTATION,
    STAGES_ANNOTATION,
)

__all__ = ["read_yaml"]


def _pinned_node(spec: Any) -> str | None:
    """The node a pod spec's required node affinity names (by ``metadata.name`` field or
    the hostname label), or its ``nodeName``; ``None`` if it names none."""
    if not isinstance(spec, Mapping):
        return None
    if isinstance(spec.get("nodeName"), str):
        return str(spec["nodeName"])
    terms: Any = spec
    for key in ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"):
        terms = terms.get(key) if isinstance(terms, Mapping) else None
    for term in terms if isinstance(terms, list) else []:
        for part in ("matchFields", "matchExpressions"):
            reqs = term.get(part) if isinstance(term, Mapping) else None
            for req in reqs if isinstance(reqs, list) else []:
                if not isinstance(req, Mapping):
                    continue
                vals = req.get("values")
                if (
                    req.get("operator") == "In"
                    and isinstance(vals, list)
                    and len(vals) == 1
                    and req.get("key") in ("metadata.name", "kubernetes.io/hostname")
                ):
                    return str(vals[0])
    return None


def _pod_gpus(spec: Any) -> int | None:
    """The workers a pod holds: its containers' ``nvidia.com/gpu`` limits (``None`` if none
    is a whole number >= 1)."""
    total = 0
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for c in containers if isinstance(containers, list) else []:
        res = c.get("resources") if isinstance(c, Mapping) else None
        limits = res.get("limits") if isinstance(res, Mapping) else None
        value = limits.get(GPU_RESOURCE) if isinstance(limits, Mapping) else None
        if value is None:
            continue
        text = str(value)
        if not text.isdigit():
            return None
        total += int(text)
    return total or None


def _env_int(spec: Any, name: str) -> int | None:
    """The integer value of environment variable ``name`` in a pod spec's first container that
    sets it (``None`` if none does)."""
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for c in containers if isinstance(containers, list) else []:
        env = c.get("env") if isinstance(c, Mapping) else None
        for e in env if isinstance(env, list) else []:
            if isinstance(e, Mapping) and e.get("name") == name and str(e.get("value", "")).isdigit():
                return int(str(e["value"]))
    return None


def _is_shard(obj: Any) -> bool:
    """Whether a pod or pod template is a parameter-server shard's (its role annotation)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(ROLE_ANNOTATION) == "ps"


def _job_id(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    jid = annotations.get(JOB_ID_ANNOTATION) if isinstance(annotations, Mapping) else None
    return None if jid is None else str(jid)


def read_yaml(path: Path, found: Found) -> None:
    import yaml

    problems = found.problems
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        problems.append(f"{path.name}: not YAML ({str(e).splitlines()[0]})")
        return
    for i, doc in enumerate(docs):
        where = f"{path.name} document {i + 1}"
        if not isinstance(doc, Mapping):
            problems.append(f"{where}: not a Kubernetes object")
            continue
        api, kind, jid = doc.get("apiVersion"), doc.get("kind"), _job_id(doc)
        spec = doc.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        if api == "batch.volcano.sh/v1alpha1" and kind == "Job":
            tasks = spec.get("tasks")
            for t, task in enumerate(tasks if isinstance(tasks, list) else [None]):
                template = task.get("template") if isinstance(task, Mapping) else None
                pod = template.get("spec") if isinstance(template, Mapping) else None
                node, gpus = _pinned_node(pod), _pod_gpus(pod)
                replicas = task.get("replicas") if isinstance(task, Mapping) else None
                if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                    replicas = None
                if _is_shard(template) and jid is not None and node is not None and replicas is not None:
                    found.add(jid, node, replicas, path.name, shard=True)
                    continue
                if jid is None or node is None or gpus is None or replicas is None:
                    problems.append(
                        f"{where}: spec.tasks[{t}] needs the {JOB_ID_ANNOTATION} annotation, a node pin, "
                        f"{GPU_RESOURCE} limits and replicas >= 1"
                    )
                    continue
                found.add(jid, node, replicas * gpus, path.name)
                offset = _env_int(pod, "RANK_OFFSET")
                if offset is not None:  # rank = RANK_OFFSET + VC_TASK_INDEX (or + local rank)
                    found.rank(jid, offset, node, replicas * gpus)
        elif api == "v1" and kind == "Pod" and jid is not None and _is_shard(doc):
            node = _pinned_node(spec)
            if node is None:
                problems.append(f"{where}: the shard's pod is not pinned to a node")
                continue
            found.add(jid, node, 1, path.name, shard=True)
        elif api == "v1" and kind == "Pod" and jid is not None:
            node, gpus = _pinned_node(spec), _pod_gpus(spec)
            if node is None or gpus is None:
                problems.append(f"{where}: the pod is not pinned to a node or holds no {GPU_RESOURCE}")
                continue
            found.add(jid, node, gpus, path.name)
            first = _env_int(spec, "RANK")
            first = _env_int(spec, "RANK_OFFSET") if first is None else first
            if first is not None:
                found.rank(jid, first, node, gpus)
        elif api == "batch/v1" and kind == "Job" and jid is not None:
            meta = doc.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
            text = annotations.get(ASSIGNMENT_ANNOTATION) if isinstance(annotations, Mapping) else None
            try:
                advice = json.loads(text) if isinstance(text, str) else None
            except json.JSONDecodeError:
                advice = None
            if not isinstance(advice, dict) or not all(
                isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in advice.values()
            ):
                problems.append(
                    f"{where}: metadata.annotations[{ASSIGNMENT_ANNOTATION!r}] must be a JSON object of counts"
                )
                continue
            for node, k in advice.items():
                found.add(jid, str(node), k, path.name)
            text = annotations.get(SHARDS_ANNOTATION) if isinstance(annotations, Mapping) else None
            try:
                shards = json.loads(text) if isinstance(text, str) else {}
            except json.JSONDecodeError:
                problems.append(f"{where}: metadata.annotations[{SHARDS_ANNOTATION!r}] is not JSON")
                continue
            for node, k in shards.items() if isinstance(shards, dict) else ():
                if isinstance(k, int) and k > 0:
                    found.add(jid, str(node), k, path.name, shard=True)
            text = annotations.get(STAGES_ANNOTATION) if isinstance(annotations, Mapping) else None
            if text is not None:
                try:
                    matrix = json.loads(text) if isinstance(text, str) else None
                except json.JSONDecodeError:
                    matrix = None
                if not (
                    isinstance(matrix, list)
                    and matrix
                    and all(isinstance(row, list) and all(isinstance(s, str) for s in row) for row in matrix)
                ):
                    problems.append(
                        f"{where}: metadata.annotations[{STAGES_ANNOTATION!r}] must be a JSON list of rows of nodes"
                    )
                    continue
                found.stages[jid] = matrix
